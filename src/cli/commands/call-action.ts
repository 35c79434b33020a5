import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { answerSource, confirm, readAnswersFile } from '../../a2a/answer-sources.js';
import { A2aClient, type A2aClientOptions } from '../../a2a/client.js';
import { runCall, type CallOutcome, type RunCallOptions } from '../../a2a/conversation.js';
import { normalizeE164 } from '../../a2a/e164.js';
import { describeOutcome } from '../../a2a/outcome-report.js';
import { Transcript } from '../../a2a/transcript.js';
import { DEFAULT_WAITS, formatDuration } from '../../a2a/waits.js';
import type { Clock } from '../../clock.js';
import { configAbsent, loadConfig } from '../../config/load.js';
import { resolveKey } from '../../config/key.js';
import { alertsConfigSchema, type CallAlertConfig } from '../../config/alerts.js';
import { startA2aEmulator, type RunningA2aEmulator } from '../../emulator/a2a/server.js';
import { DEMO_SCRIPT } from '../../emulator/a2a/script.js';
import { registerSecret } from '../../log/secret-registry.js';
import { Secret } from '../../secret.js';
import { globalOptions } from '../context.js';
import { ExitCode } from '../exit-codes.js';
import { A2A_KEY_ENV, type CallOptions } from './call-options.js';

/** What `call` touches beyond its options; the process gives the real ones, tests their own. */
export interface CallIo {
  out(line: string): void;
  err(line: string): void;
  /** Questions are asked here when it is a terminal. */
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
  /** Subscribe to Ctrl-C; returns the unsubscribe. */
  onSigint(handler: () => void): () => void;
  /** Leave at once (a second Ctrl-C). */
  exit(code: number): void;
  clock?: Clock;
  /** Timings of the client and of the conversation (tests shorten them). */
  timing?: { client?: Partial<A2aClientOptions>; run?: Pick<RunCallOptions, 'interruptGraceMs' | 'unknownBackoffMs' | 'maxReconnects' | 'waits'> };
}

/** The process's terminal, signals and exit. */
export function processIo(): CallIo {
  return {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
    stdin: process.stdin,
    stdout: process.stdout,
    env: process.env,
    onSigint: (handler) => {
      process.on('SIGINT', handler);
      return () => process.removeListener('SIGINT', handler);
    },
    exit: (code) => process.exit(code),
  };
}

/** `call`: read the configuration's `alerts.call`, then place the call. */
export async function callAction(opts: CallOptions, cmd: Command): Promise<number> {
  return placeCall(opts, await callSettings(cmd), processIo());
}

/** Place the call of `call` and follow it to its end; resolves with the exit code (see `call --help`). */
export async function placeCall(opts: CallOptions, settings: CallAlertConfig | undefined, io: CallIo): Promise<number> {
  const fail = (line: string, code: number) => {
    io.err(`error: ${line}`);
    return code;
  };
  const to = normalizeE164(opts.to);
  if (!to) return fail(`--to ${JSON.stringify(opts.to)} is not a phone number in E.164 form (like +81312345678)`, ExitCode.USAGE);
  const goal = opts.goal.trim();
  if (goal === '') return fail('--goal must say what the call is for', ExitCode.USAGE);
  if (settings?.allowed_numbers && !settings.allowed_numbers.includes(to)) {
    return fail(`${to} is not in alerts.call.allowed_numbers of the configuration; refusing to call it`, ExitCode.USAGE);
  }
  let prepared: string[] = [];
  if (opts.answers !== undefined) {
    try {
      prepared = await readAnswersFile(opts.answers);
    } catch (err) {
      return fail(`--answers: cannot read ${opts.answers} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); give a text file with one answer per line`, ExitCode.USAGE);
    }
  }
  const patienceMs = Math.round((opts.patienceMinutes ?? settings?.patience_minutes ?? DEFAULT_WAITS.patienceMs / 60_000) * 60_000);

  let emulator: RunningA2aEmulator | undefined;
  let baseUrl: string;
  let key: Secret;
  if (opts.emulator) {
    const demoKey = `a2a_emulator_${randomBytes(8).toString('hex')}`;
    emulator = await startA2aEmulator({ port: 0, keys: { [demoKey]: 'emulator' }, scripts: { default: DEMO_SCRIPT }, stepDelayMs: 150 });
    baseUrl = emulator.url;
    key = new Secret(demoKey);
    io.out(`(emulator at ${baseUrl}: no real call is placed)`);
  } else {
    const url = opts.baseUrl ?? settings?.base_url;
    if (!url || !URL.canParse(url)) return fail('no call API address: give --base-url or set alerts.call.base_url in the configuration', ExitCode.USAGE);
    baseUrl = url;
    key = await callKey(opts, settings, io.env);
    if (!opts.yes) {
      if (!io.stdin.isTTY) {
        return fail(`refusing to place a real call to ${to} without confirmation: run in a terminal or pass --yes`, ExitCode.USAGE);
      }
      const ok = await confirm(`Place a REAL phone call to ${to}? It rings that phone and spends credits.`, io.stdin, io.stdout);
      if (!ok) return fail('not confirmed; no call placed', ExitCode.FAILURE);
    }
  }

  const client = new A2aClient({ baseUrl, key, ...(io.clock ? { clock: io.clock } : {}), ...io.timing?.client });
  const transcript = new Transcript();
  let taskId: string | undefined;
  const interrupt = new AbortController();
  let sigints = 0;
  const onSigint = () => {
    if (++sigints === 1) {
      io.err('interrupted: ending the call (Ctrl-C again to leave at once)');
      interrupt.abort(new Error('interrupted'));
      return;
    }
    io.err(
      `error: leaving at once: ${taskId ? `task ${taskId} may still be live; cancel it in the portal` : 'a call may be ringing; task id unknown'}. Check the call history in the portal before placing another call.`,
    );
    io.exit(ExitCode.UNKNOWN_OUTCOME);
  };
  const offSigint = io.onSigint(onSigint);
  try {
    // The card fetch checks the key before anything rings, and says whether streaming is offered.
    const card = await client.fetchAgentCard(interrupt.signal);
    io.out(`calling ${to}${card.name ? ` through ${card.name}` : ''}`);
    const outcome = await runCall(client, { to, goal }, {
      ...io.timing?.run,
      waits: { ...io.timing?.run?.waits, patienceMs },
      stream: card.capabilities.streaming !== false,
      signal: interrupt.signal,
      onEvent: (e) => {
        taskId = e.taskId;
        for (const line of transcript.lines(e)) io.out(line);
      },
      answer: answerSource({
        answers: prepared,
        terminal: io.stdin.isTTY ? { input: io.stdin, output: io.stdout } : undefined,
        onInterrupt: onSigint,
      }),
      // Printed once the service took the answer, not when it was picked: a refused answer was never spoken.
      onAnswer: (text) => io.out(`  you: ${text}`),
    });
    const report = describeOutcome(outcome, { patience: formatDuration(patienceMs) });
    io.out(report.summary);
    if (report.problem) io.err(`error: ${report.problem}`);
    return callExitCode(outcome);
  } catch (err) {
    // runCall throws only when no call was placed.
    if (interrupt.signal.aborted) return fail('interrupted before the call was placed; nothing was sent', ExitCode.INTERRUPTED);
    throw err;
  } finally {
    offSigint();
    await client.close();
    await emulator?.close();
  }
}

/**
 * The exit code of a call's outcome: 0 completed; 1 ended otherwise; 3 the
 * connector ended it (no answer, patience); 4 the outcome is unknown (a call
 * may exist that the connector cannot vouch for); 130 interrupted with the
 * call canceled.
 */
export function callExitCode(o: CallOutcome): number {
  if (o.endedBy === 'interrupt') return o.taskId && o.cancel !== 'failed' ? ExitCode.INTERRUPTED : ExitCode.UNKNOWN_OUTCOME;
  if (o.endedBy === 'lost') return o.ended ? ExitCode.FAILURE : ExitCode.UNKNOWN_OUTCOME;
  if (o.state === 'unknown' && o.cancel !== 'requested') return ExitCode.UNKNOWN_OUTCOME;
  if (o.endedBy === 'no_answer' || o.endedBy === 'patience') return ExitCode.HELD;
  return o.state === 'completed' ? ExitCode.OK : ExitCode.FAILURE;
}

/** `alerts.call` of the configuration, when there is one: an explicit --config must load; the default path may be absent. */
async function callSettings(cmd: Command): Promise<CallAlertConfig | undefined> {
  const path = globalOptions(cmd).config;
  const source = cmd.parent?.getOptionValueSource('config');
  // Only a default config that is really not there is skipped; one that cannot be read fails.
  if (source === 'default' && (await configAbsent(path))) return undefined;
  const config = await loadConfig(path);
  const alerts = (config as { alerts?: unknown }).alerts;
  return alerts === undefined ? undefined : alertsConfigSchema.parse(alerts).call;
}

/** The key: --key-file (refused when others may read it), else $A2A_KEY, else alerts.call.key. */
async function callKey(opts: CallOptions, settings: CallAlertConfig | undefined, env: NodeJS.ProcessEnv): Promise<Secret> {
  const what = { what: 'A2A key' };
  if (opts.keyFile) return resolveKey({ file: opts.keyFile }, env, what);
  const fromEnv = env[A2A_KEY_ENV];
  if (fromEnv !== undefined && fromEnv.trim() !== '') {
    const secret = new Secret(fromEnv.trim());
    registerSecret(secret);
    return secret;
  }
  if (settings) return resolveKey(settings.key, env, what);
  return resolveKey({ env: A2A_KEY_ENV }, env, what); // throws KEY_NOT_FOUND with what was tried
}
