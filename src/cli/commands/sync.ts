import type { Command } from 'commander';
import { loadConfigFor, loggerFor, runAction } from '../context.js';
import { reportSync } from '../report-error.js';
// The operator named the file: a link is followed, as any command would (issue 11 keeps links out of watch folders).
import { ALWAYS_FOLLOW } from '../../sources/open-file.js';

/** `sync <dataset> [--file F]`: one sync, then exit (0 published/unchanged, 3 held for a person, 75 try again later: the API unreachable or busy, the dataset busy; 1 failed). */
export function register(program: Command): void {
  program
    .command('sync')
    .description('sync one dataset once from an export file, then exit (3 when a guard or a person holds it, 75 when it may work later: API unreachable or busy)')
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
          const summary = await cli.engine.sync(cli.dataset(name), { file: opts.file, links: ALWAYS_FOLLOW }, opts.publish === false ? { publish: false } : {});
          // The engine reports every failure in the summary (never thrown): say what happened on stderr, exit by result and code.
          return reportSync(summary);
        } finally {
          await cli.close();
        }
      }),
    );
}
