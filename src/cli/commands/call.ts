import { InvalidArgumentError, type Command } from 'commander';
import { runAction } from '../context.js';
import { A2A_KEY_ENV, type CallOptions } from './call-options.js';

function minutes(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || n > 1440) throw new InvalidArgumentError('expected minutes, more than 0 and at most 1440 (e.g. 5 or 0.5)');
  return n;
}

/** `call`: place a phone call through the service's call agent and follow the conversation. */
export function register(program: Command): void {
  program
    .command('call')
    .description("place a phone call through the service's call agent (A2A), print the conversation and answer the agent's questions")
    .requiredOption('--to <number>', 'number to call, E.164 (+81…); spaces and dashes are removed')
    .requiredOption('--goal <text>', 'what the agent should achieve on the call')
    .option('--key-file <path>', `file holding the A2A key (chmod 600); else $${A2A_KEY_ENV}, else alerts.call.key of the config`)
    .option('--base-url <url>', 'the call API endpoint; else alerts.call.base_url of the config')
    .option('--answers <file>', "answers to the agent's questions, one per line, used in order before asking at the terminal")
    .option(
      '--patience-minutes <n>',
      'how long the service may keep the call waiting without going on (call not connected, an answered question still shown) before the call is canceled; else alerts.call.patience_minutes, else 5',
      minutes,
    )
    .option('-y, --yes', 'place a real call without asking for confirmation')
    .option('--emulator', 'call through a local emulator with a demo conversation (no real call, no credits)')
    .addHelpText(
      'after',
      '\nExit codes: 0 the call completed; 1 it ended otherwise (failed, canceled by the other side, rejected, auth-required) or could not be placed;\n' +
        '2 usage; 3 the connector ended the call (no answer to give, or the patience ran out); 4 the outcome is unknown: a call may have been\n' +
        'placed or may still be live, check the call history in the portal before placing another; 75 nothing was sent (the service unreachable);\n' +
        '130 interrupted (Ctrl-C) and the call was canceled, or none was placed.',
    )
    .action(
      runAction(async (opts: CallOptions, cmd: Command) => {
        // The client, the emulator and the config loader load only when a call is made.
        const { callAction } = await import('./call-action.js');
        return callAction(opts, cmd);
      }),
    );
}
