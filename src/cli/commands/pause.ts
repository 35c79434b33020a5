import type { Command } from 'commander';
import { userInfo } from 'node:os';
import { humanOutput, loadConfigFor, loggerFor, runAction } from '../context.js';

/** `pause <dataset>`: stop taking exports for the dataset (they wait in the folder) until `resume`; the daemon notices it from the state db. */
export function register(program: Command): void {
  program
    .command('pause')
    .description('stop taking exports for a dataset (files wait in the folder) until resume; the running daemon notices it, no restart')
    .argument('<dataset>', 'dataset name from the configuration')
    .option('--json', 'print one JSON object (the default when stdout is not a terminal)')
    .action(
      runAction(async (name: string, opts: { json?: boolean }, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const { cliEngine } = await import('../../sync/cli-engine.js');
        const cli = await cliEngine(config, loggerFor(cmd, config, process.stderr), []);
        try {
          const ds = cli.dataset(name);
          const p = cli.engine.pause(ds, `pause by ${safeUser()}`);
          const at = new Date(p.at).toISOString();
          process.stdout.write(
            humanOutput(opts)
              ? `${ds.name}: paused since ${at} (${p.by}); exports wait in the folder until dataset-connector resume ${ds.name}\n`
              : `${JSON.stringify({ dataset: ds.name, paused: true, since: at, by: p.by })}\n`,
          );
          return 0;
        } finally {
          await cli.close();
        }
      }),
    );
}

function safeUser(): string {
  try {
    return userInfo().username;
  } catch {
    return `uid ${process.getuid?.() ?? '?'}`;
  }
}
