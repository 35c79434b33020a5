import { hasCode } from '../errors.js';
import { registeredSecrets } from '../log/secret-registry.js';
import { scrubLine } from '../log/scrub.js';
import type { HeldActionResult } from '../sync/executor/approve.js';
import { ExitCode, type ExitCodeValue } from './exit-codes.js';

/** What a person can do with a held change: the engine method of the same name. */
export type HeldAction = 'approve' | 'discard';

/** What `approve` or `discard` prints, and its exit code. */
export interface HeldReport {
  exitCode: ExitCodeValue;
  /** For a person: what was done (stdout) or, when it was not, what happened and what to do (stderr). */
  stdout: string[];
  stderr: string[];
  /** The result as one object, printed on stdout when piped or with --json (stderr still says what to do). */
  json: Record<string, unknown>;
}

/**
 * Report what approve or discard did, by the README's exit codes: 0 published
 * or discarded (one line on stdout); 3 still held for a person (the key cannot
 * publish, a guard of the server held it again: on stderr, with what to do);
 * 1 not published (the draft expired or was discarded meanwhile: on stderr,
 * with what to do).
 */
export function heldResultReport(name: string, r: HeldActionResult): HeldReport {
  const version = r.version === null ? '' : ` (version ${r.version})`;
  const json = { ...r };
  if (r.action === 'published' || r.action === 'discarded') return { exitCode: ExitCode.OK, stdout: [`${name}: ${r.action}${version}: ${r.message}`], stderr: [], json };
  const code = r.code ?? null;
  if (r.action === 'expired') {
    return failure(json, ExitCode.FAILURE, `expired [${code ?? 'no code'}] (dataset ${name})${version}: ${r.message}`, [
      `the next export of ${name} syncs the change again; to do it now: dataset-connector sync ${name} --file <export>`,
    ]);
  }
  // Not published, and held again: by a guard of the server (word "held"), or staged for the portal.
  const word = code === 'HELD_GUARD' ? 'held' : 'staged';
  const next =
    code === 'HELD_PUBLISH_REQUIRED'
      ? `publish draft ${r.version ?? ''} in the portal, or reissue the key with the publish role and run dataset-connector approve ${name} again`
      : `held for a person: see dataset-connector status, then approve or discard ${name}`;
  return failure(json, ExitCode.HELD, `${word} [${code ?? 'no code'}] (dataset ${name})${version}: ${r.message}`, [next]);
}

/**
 * Report approve or discard that found nothing of the connector's held
 * (NOTHING_HELD), or undefined for any other error. `discard` with nothing
 * held has nothing to do: exit 0, said on stdout (a repeated discard, or a
 * change a newer export replaced, is not a failure). `approve` with nothing
 * held published nothing: exit 1, on stderr. A draft someone else made
 * (or that mixes their change with the connector's) is held for a person
 * in the portal: exit 3 for either.
 */
export function nothingHeldReport(action: HeldAction, name: string, err: unknown): HeldReport | undefined {
  if (!hasCode(err, 'NOTHING_HELD')) return undefined;
  const { held, version } = err.context as { held?: string | null; version?: number | null };
  const json = { dataset: name, action: 'nothing_held', code: 'NOTHING_HELD', held: held ?? null, version: version ?? null };
  if (held === 'foreign_draft') {
    const draft = typeof version === 'number' ? `draft ${version}` : 'the draft';
    return failure(
      json,
      ExitCode.HELD,
      `held [DRAFT_PENDING] (dataset ${name}): ${draft} on the server holds changes the connector did not make; approve and discard act only on the connector's own held changes, so nothing was ${action === 'approve' ? 'published' : 'discarded'}`,
      [`publish or discard ${draft} in the portal (or set policy.on_foreign_draft: discard); the next sync goes on from there`],
    );
  }
  if (action === 'discard') return { exitCode: ExitCode.OK, stdout: [`${name}: nothing held: there is no held change to discard`], stderr: [], json };
  return failure(json, ExitCode.FAILURE, `nothing held (dataset ${name}): there is no held change to approve; nothing was published`, [
    'dataset-connector status shows what each dataset holds',
  ]);
}

function failure(json: Record<string, unknown>, exitCode: ExitCodeValue, line: string, next: string[]): HeldReport {
  return { exitCode, stdout: [], stderr: [line, ...next.map((n) => `  ${n}`)], json: { ...json, message: line } };
}

/**
 * Print a report (secrets scrubbed, as reportError does) and return its exit
 * code: for a person, its lines; otherwise the JSON object on stdout, and
 * still on stderr what to do when it was not done.
 */
export function printHeldReport(
  r: HeldReport,
  human: boolean,
  out: { write(s: string): unknown } = process.stdout,
  err: { write(s: string): unknown } = process.stderr,
): ExitCodeValue {
  const secrets = registeredSecrets();
  if (human) for (const l of r.stdout) out.write(`${scrubLine(l, secrets)}\n`);
  else out.write(`${scrubLine(JSON.stringify(r.json), secrets)}\n`);
  for (const l of r.stderr) err.write(`${scrubLine(l, secrets)}\n`);
  return r.exitCode;
}
