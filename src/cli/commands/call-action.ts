import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import { answerSource, confirm, readAnswersFile } from '../../a2a/answer-sources.js';
import { A2aClient } from '../../a2a/client.js';
import { runCall } from '../../a2a/conversation.js';
import { normalizeE164 } from '../../a2a/e164.js';
import { outcomeLine, Transcript } from '../../a2a/transcript.js';
import { configAbsent, loadConfig } from '../../config/load.js';
import { resolveKey } from '../../config/key.js';
import { alertsConfigSchema, type CallAlertConfig } from '../../daemon/alerts-config.js';
import { startA2aEmulator, type RunningA2aEmulator } from '../../emulator/a2a/server.js';
import { DEMO_SCRIPT } from '../../emulator/a2a/script.js';
import { hasCode } from '../../errors.js';
import { registerSecret } from '../../log/secret-registry.js';
import { Secret } from '../../secret.js';
import { globalOptions } from '../context.js';
import { ExitCode } from '../exit-codes.js';
import { A2A_KEY_ENV, type CallOptions } from './call.js';

/** Place the call of `call` and follow it to its end; resolves with the exit code. */
export async function callAction(opts: CallOptions, cmd: Command): Promise<number> {
  const out = (line: string) => process.stdout.write(`${line}\n`);
  const fail = (line: string, code: number) => {
    process.stderr.write(`error: ${line}\n`);
    return code;
  };
  const to = normalizeE164(opts.to);
  if (!to) return fail(`--to ${JSON.stringify(opts.to)} is not a phone number in E.164 form (like +81312345678)`, ExitCode.USAGE);
  const goal = opts.goal.trim();
  if (goal === '') return fail('--goal must say what the call is for', ExitCode.USAGE);

  const settings = await callSettings(cmd);
  if (settings?.allowed_numbers && !settings.allowed_numbers.includes(to)) {
    return fail(`${to} is not in alerts.call.allowed_numbers of the configuration; refusing to call it`, ExitCode.USAGE);
  }
  const prepared = opts.answers ? await readAnswersFile(opts.answers) : [];

  let emulator: RunningA2aEmulator | undefined;
  let baseUrl: string;
  let key: Secret;
  if (opts.emulator) {
    const demoKey = `a2a_emulator_${randomBytes(8).toString('hex')}`;
    emulator = await startA2aEmulator({ port: 0, keys: { [demoKey]: 'emulator' }, scripts: { default: DEMO_SCRIPT }, stepDelayMs: 150 });
    baseUrl = emulator.url;
    key = new Secret(demoKey);
    out(`(emulator at ${baseUrl}: no real call is placed)`);
  } else {
    const url = opts.baseUrl ?? settings?.base_url;
    if (!url || !URL.canParse(url)) return fail('no call API address: give --base-url or set alerts.call.base_url in the configuration', ExitCode.USAGE);
    baseUrl = url;
    key = await callKey(opts, settings);
    if (!opts.yes) {
      if (!process.stdin.isTTY) {
        return fail(`refusing to place a real call to ${to} without confirmation: run in a terminal or pass --yes`, ExitCode.USAGE);
      }
      const ok = await confirm(`Place a REAL phone call to ${to}? It rings that phone and spends credits.`, process.stdin, process.stdout);
      if (!ok) return fail('not confirmed; no call placed', ExitCode.FAILURE);
    }
  }

  const client = new A2aClient({ baseUrl, key });
  const transcript = new Transcript();
  let taskId: string | undefined;
  const abort = new AbortController();
  const onSigint = () => abort.abort(new Error('interrupted'));
  process.once('SIGINT', onSigint);
  try {
    // The card fetch checks the key before anything rings, and says whether streaming is offered.
    const card = await client.fetchAgentCard(abort.signal);
    out(`calling ${to}${card.name ? ` through ${card.name}` : ''}`);
    const outcome = await runCall(client, { to, goal }, {
      stream: card.capabilities.streaming !== false,
      signal: abort.signal,
      onEvent: (e) => {
        taskId = e.taskId;
        for (const line of transcript.lines(e)) out(line);
      },
      answer: answerSource({
        answers: prepared,
        terminal: process.stdin.isTTY ? { input: process.stdin, output: process.stdout } : undefined,
        onAnswer: (text) => out(`  you: ${text}`),
      }),
    });
    out(outcomeLine(outcome));
    if (outcome.endedBy === 'no_answer') return ExitCode.HELD;
    // A27-states: outcomes the document does not list say on stderr what went wrong; none is retried.
    if (outcome.state === 'rejected') return fail('the call service refused the call (rejected); it is not retried', ExitCode.FAILURE);
    if (outcome.state === 'auth-required') {
      return fail('the call service wants an authorisation the A2A key does not give (auth-required): check the key and its connected agent in the portal', ExitCode.FAILURE);
    }
    if (outcome.state === 'unknown') {
      return fail(`the call service could not say how the call went (state unknown); it may have been placed: check task ${outcome.taskId} before calling again`, ExitCode.FAILURE);
    }
    return outcome.state === 'completed' ? ExitCode.OK : ExitCode.FAILURE;
  } catch (err) {
    if (abort.signal.aborted && taskId) {
      await client.cancel(taskId).catch(() => undefined);
      return fail(`interrupted; task ${taskId} was canceled`, 130);
    }
    if (hasCode(err, 'OUTCOME_UNKNOWN')) {
      return fail('the answer to the call start was lost: the call may have been placed. It is not retried; check before calling again.', ExitCode.FAILURE);
    }
    throw err;
  } finally {
    process.removeListener('SIGINT', onSigint);
    await client.close();
    await emulator?.close();
  }
}

/** `alerts.call` of the configuration, when there is one: an explicit --config must load; the default path may be absent. */
async function callSettings(cmd: Command): Promise<CallAlertConfig | undefined> {
  const path = globalOptions(cmd).config;
  const source = cmd.parent?.getOptionValueSource('config');
  // Only a default config that is really not there is skipped; one that cannot be read fails (review item 11).
  if (source === 'default' && (await configAbsent(path))) return undefined;
  const config = await loadConfig(path);
  const alerts = (config as { alerts?: unknown }).alerts;
  return alerts === undefined ? undefined : alertsConfigSchema.parse(alerts).call;
}

/** The key: --key-file (refused when others may read it), else $A2A_KEY, else alerts.call.key. */
async function callKey(opts: CallOptions, settings: CallAlertConfig | undefined): Promise<Secret> {
  if (opts.keyFile) return resolveKey({ file: opts.keyFile });
  const fromEnv = process.env[A2A_KEY_ENV];
  if (fromEnv !== undefined && fromEnv.trim() !== '') {
    const secret = new Secret(fromEnv.trim());
    registerSecret(secret);
    return secret;
  }
  if (settings) return resolveKey(settings.key);
  return resolveKey({ env: A2A_KEY_ENV }); // throws KEY_NOT_FOUND with what was tried
}
