import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { DEFAULT_CONFIG_PATH } from '../config/load.js';
import { LOG_LEVELS } from '../config/schema.js';
import * as commands from './commands/index.js';

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: string };
    return pkg.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

/** The `dataset-connector` program with its global options and every command registered. */
export function buildProgram(): Command {
  const program = new Command('dataset-connector')
    .description('Keeps a shop\'s business dataset in step with its POS/ERP exports.')
    .version(packageVersion(), '-V, --version')
    .addOption(
      new Option('-c, --config <path>', 'connector.yaml (conf.d/*.yaml beside it is read too)')
        .default(DEFAULT_CONFIG_PATH)
        .env('DATASET_CONNECTOR_CONFIG'),
    )
    .addOption(new Option('--log-format <format>', 'json (for journald) or pretty (for people)').choices(['json', 'pretty']))
    .addOption(new Option('--log-level <level>', 'lowest level logged').choices([...LOG_LEVELS]))
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  for (const register of Object.values(commands)) register(program);
  return program;
}
