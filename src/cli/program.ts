import { Command, Option } from 'commander';
import { DEFAULT_CONFIG_PATH, LOG_LEVELS } from '../config/defaults.js';
import { COMMANDS } from './commands/index.js';
import { connectorVersion } from '../version.js';

/**
 * The `dataset-connector` program with its global options and its commands.
 * Given the command-line words (`process.argv.slice(2)`), only the command
 * they name is loaded; without them, or when they name none (help, a typo),
 * every command is, so help lists all and a typo gets a suggestion.
 */
export async function buildProgram(args?: readonly string[]): Promise<Command> {
  const program = new Command('dataset-connector')
    .description('Keeps a shop\'s business dataset in step with its POS/ERP exports.')
    .version(connectorVersion(), '-V, --version')
    .addOption(
      new Option('-c, --config <path>', 'connector.yaml (conf.d/*.yaml beside it is read too)')
        .default(DEFAULT_CONFIG_PATH)
        .env('DATASET_CONNECTOR_CONFIG'),
    )
    .addOption(new Option('--log-format <format>', 'json (for journald) or pretty (for people)').choices(['json', 'pretty']))
    .addOption(new Option('--log-level <level>', 'lowest level logged').choices([...LOG_LEVELS]))
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  const named = args === undefined ? undefined : commandNamed(program, args);
  const load = named !== undefined && Object.hasOwn(COMMANDS, named) ? [COMMANDS[named]!] : Object.values(COMMANDS);
  for (const m of await Promise.all(load.map((l) => l()))) m.register(program);
  return program;
}

/**
 * The command the words name: the first operand after the program's own
 * options (skipping their values), or the one after `help`. Reads the
 * program's option definitions, so a new global option needs no change here.
 */
export function commandNamed(program: Command, args: readonly string[]): string | undefined {
  const operands: string[] = [];
  for (let i = 0; i < args.length && operands.length < 2; i++) {
    const word = args[i]!;
    if (word === '--') {
      operands.push(...args.slice(i + 1, i + 3));
      break;
    }
    if (!word.startsWith('-') || word === '-') {
      operands.push(word);
      if (word !== 'help') break;
      continue;
    }
    const opt = program.options.find((o) => o.short === word || o.long === word);
    if (opt?.required || (opt?.optional && args[i + 1] !== undefined && !args[i + 1]!.startsWith('-'))) i++;
  }
  return operands[0] === 'help' ? operands[1] : operands[0];
}
