import type { Command } from 'commander';
import { userInfo } from 'node:os';
import type { DatasetConfig } from '../../config/schema.js';
import type { SyncEngine } from '../../sync/engine.js';
import { humanOutput, loadConfigFor, loggerFor, runAction } from '../context.js';

/** What pause or resume did: the line for a person and the JSON object. */
interface PauseOutcome {
  text: string;
  json: Record<string, unknown>;
}

/**
 * `pause <dataset>` and `resume <dataset>` (issue 14): one state-db write
 * each (no network, no lock), which the running daemon reads by itself.
 */
export function registerPauseAction(program: Command, name: 'pause' | 'resume', description: string, act: (engine: SyncEngine, ds: DatasetConfig) => PauseOutcome): void {
  program
    .command(name)
    .description(description)
    .argument('<dataset>', 'dataset name from the configuration')
    .option('--json', 'print one JSON object (the default when stdout is not a terminal)')
    .action(
      runAction(async (dataset: string, opts: { json?: boolean }, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const { cliEngine } = await import('../engine.js');
        const cli = await cliEngine(config, loggerFor(cmd, config, process.stderr), []);
        try {
          const out = act(cli.engine, cli.dataset(dataset));
          process.stdout.write(humanOutput(opts) ? `${out.text}\n` : `${JSON.stringify(out.json)}\n`);
          return 0;
        } finally {
          await cli.close();
        }
      }),
    );
}

/** Who is running the command, for status ("pause by …"). */
export function whoRuns(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? '?'}`;
  }
}
