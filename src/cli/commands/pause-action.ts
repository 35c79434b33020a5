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
 * `pause <dataset> [--feed F]` and `resume <dataset> [--feed F]` (issue 14):
 * one state-db write each (no network, no lock), which the running daemon reads by itself.
 */
export function registerPauseAction(program: Command, name: 'pause' | 'resume', description: string, act: (engine: SyncEngine, ds: DatasetConfig, feed: string | undefined) => PauseOutcome): void {
  program
    .command(name)
    .description(description)
    .argument('<dataset>', 'dataset name from the configuration')
    .option('--feed <name>', "one feed of the dataset only (its files wait in its folder; the dataset's other feeds go on)")
    .option('--json', 'print one JSON object (the default when stdout is not a terminal)')
    .action(
      runAction(async (dataset: string, opts: { json?: boolean; feed?: string }, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const { cliEngine } = await import('../engine.js');
        const cli = await cliEngine(config, loggerFor(cmd, config, process.stderr), []);
        try {
          const out = act(cli.engine, cli.dataset(dataset), opts.feed);
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
