import type { Command } from 'commander';
import { loadConfigFor, loggerFor, runAction } from '../context.js';

/** `sync <dataset> [--file F]`: one sync, then exit (0 published/unchanged, 3 held for a person, 1 failed). */
export function register(program: Command): void {
  program
    .command('sync')
    .description('sync one dataset once from an export file, then exit (exit 3 when a guard or a person holds it)')
    .argument('<dataset>', 'dataset name from the configuration')
    .requiredOption('--file <path>', 'the export file to sync')
    .option('--no-publish', 'stage the change as a draft and leave it for approve or the portal')
    .action(
      runAction(async (name: string, opts: { file: string; publish: boolean }, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const logger = loggerFor(cmd, config);
        const { cliEngine } = await import('../../sync/cli-engine.js');
        const cli = await cliEngine(config, logger, [name], 'sync');
        try {
          const summary = await cli.engine.sync(cli.dataset(name), { file: opts.file }, opts.publish === false ? { publish: false } : {});
          if (summary.code === 'DATASET_BUSY') {
            // Another process (the daemon) works on it: say so and exit EX_TEMPFAIL, nothing was done.
            process.stderr.write(`${summary.message}\n`);
            return 75;
          }
          const { exitCodeFor } = await import('../../sync/outcome.js');
          return exitCodeFor(summary.result);
        } finally {
          await cli.close();
        }
      }),
    );
}
