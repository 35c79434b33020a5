import { ConfigError, formatIssue } from '../config/errors.js';
import { ConnectorError } from '../errors.js';
import { registeredSecrets } from '../log/secret-registry.js';
import { scrubLine } from '../log/scrub.js';
import type { RowErrorBrief, SyncSummary } from '../sync/outcome.js';
import { ExitCode, exitCodeFor, exitCodeForSync, type ExitCodeValue } from './exit-codes.js';

// Only commands print these (the daemon logs events): nothing tries a command again but the person or cron that ran it.
const NEXT_STEP: Record<string, string> = {
  retry: 'this may be temporary: run the command again later',
  hold: 'held for a person: see `dataset-connector status`, then `approve` or `discard`',
  reject: 'the input was rejected; nothing from it was published',
  stop: 'fix the cause above, then run the command again',
};

/** What to do next, for codes where the general advice of their action does not fit. */
const NEXT_STEP_BY_CODE: Record<string, string> = {
  PUBLISH_REQUIRED: 'the key has no publish role: publish or discard the draft in the portal, or reissue the key with the publish role and run the command again',
  HELD_PUBLISH_REQUIRED: 'the key has no publish role: publish the draft in the portal, or reissue the key with the publish role and run dataset-connector approve',
  DRAFT_PENDING:
    'a draft someone else made waits on the server: publish or discard it in the portal (or set policy.on_foreign_draft: discard), then sync again; approve and discard do not act on it',
  DRAFT_MIXED:
    "a draft holds the connector's writes and someone else's changes: publish or discard it in the portal, then sync again; approve and discard do not act on it",
  UNKNOWN_DATASET: 'use a dataset name from the configuration (dataset-connector validate lists them)',
  FILE_NOT_FOUND: 'check the path given with --file',
  POINT_INVALID: 'name the point with --to-version <n> (dataset-connector why shows versions) or --to-time <ISO time>',
  HISTORY_TOO_OLD: 'choose a later point: the history keeps history.retention_days (and retention_versions, max_bytes) of each dataset',
  VERSION_TOO_NEW: 'choose a version the history keeps (named above); dataset-connector status shows the version published now',
  HISTORY_EMPTY: 'nothing was published since the history began; there is nothing to restore yet',
  FILE_UNREADABLE: 'check that this user can read the file given with --file',
  DATASET_PAUSED: 'the dataset was paused on purpose (status shows PAUSED): once its exports may be published again, run the resume command above, then this command again',
  FEED_PAUSED: "this feed was paused on purpose (status shows it among the paused feeds): once its exports may be published again, run the resume command above, then this command again; the dataset's other feeds are not paused",
  STATE_DIR_BUSY:
    'stop that daemon first (systemctl stop dataset-connector) or give this one its own state_dir; sync, plan, approve and discard work beside a running daemon',
};

/** The line that says what to do after an error with this code and action. */
function nextStep(code: string, action: string): string {
  return NEXT_STEP_BY_CODE[code] ?? NEXT_STEP[action] ?? '';
}

/**
 * Print an error for a person (to stderr by default) and return the exit code.
 * Config errors list every issue as file:line: option: message.
 */
export function reportError(err: unknown, out: { write(s: string): unknown } = process.stderr): ExitCodeValue {
  const write = (s: string) => out.write(`${scrubLine(s, registeredSecrets())}\n`);
  if (err instanceof ConfigError) {
    write(`error: ${err.issues.length === 1 ? 'the configuration has 1 problem' : `the configuration has ${err.issues.length} problems`}:`);
    for (const issue of err.issues) write(`  ${formatIssue(issue)}`);
  } else if (err instanceof ConnectorError) {
    const ctx = [err.context.dataset && `dataset ${err.context.dataset}`, err.context.file && `file ${err.context.file}`]
      .filter(Boolean)
      .join(', ');
    write(`error [${err.code}]${ctx ? ` (${ctx})` : ''}: ${err.message}`);
    write(`  ${nextStep(err.code, err.action)}`);
  } else {
    const e = err instanceof Error ? err : new Error(String(err));
    write(`internal error: ${e.message}`);
    if (process.env.DATASET_CONNECTOR_DEBUG) write(e.stack ?? '');
  }
  return exitCodeFor(err);
}

/**
 * Print a sync that did not end published or unchanged for a person, the way
 * reportError prints an error (code, dataset, message, what to do next), and
 * return its exit code. The log's sync.summary line has the same, as JSON.
 */
export function reportSync(
  s: Pick<SyncSummary, 'dataset' | 'file' | 'result' | 'code' | 'action' | 'message' | 'firstRowErrors' | 'rejectFile'>,
  out: { write(s: string): unknown } = process.stderr,
): ExitCodeValue {
  const code = exitCodeForSync(s);
  if (code === ExitCode.OK) return code;
  const write = (line: string) => out.write(`${scrubLine(line, registeredSecrets())}\n`);
  const ctx = [`dataset ${s.dataset}`, s.file && `file ${s.file}`].filter(Boolean).join(', ');
  // Messages of a stopped sync start with their code (stop-messages.ts); it is in the brackets already.
  const message = s.message && s.code && s.message.startsWith(`${s.code}: `) ? s.message.slice(s.code.length + 2) : s.message;
  write(`${s.result} [${s.code ?? 'no code'}] (${ctx})${message ? `: ${message}` : ''}`);
  const next = s.action ?? (code === ExitCode.TEMPFAIL ? 'retry' : code === ExitCode.HELD ? 'hold' : s.result === 'rejected' ? 'reject' : 'stop');
  for (const line of rowErrorLines(s)) write(line);
  write(`  ${nextStep(s.code ?? '', next)}`);
  return code;
}

/** The first row errors of a rejected file and where all of them are, as `plan` and `sync` print them under the rejection. */
export function rowErrorLines(r: { firstRowErrors?: readonly RowErrorBrief[] | undefined; rejectFile?: string | null | undefined }): string[] {
  const out = (r.firstRowErrors ?? []).map((e) => `  line ${e.line}, column ${e.column}: ${e.code}`);
  if (r.rejectFile) out.push(`  every row error is in ${r.rejectFile}`);
  return out;
}
