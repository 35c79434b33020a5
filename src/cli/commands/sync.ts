import type { Command } from 'commander';
import type { SyncSummary } from '../../sync/outcome.js';
import { commandLogger, humanOutput, loadConfigFor, runAction } from '../context.js';
import { reportSync } from '../report-error.js';
import { feedView } from '../../feeds/view.js';
// The operator named the file: a link is followed, as any command would (issue 11 keeps links out of watch folders).
import { ALWAYS_FOLLOW } from '../../sources/open-file.js';

/** The one line `sync` prints for a person on a terminal. */
export function syncSummaryLine(s: SyncSummary): string {
  const version = s.version === null ? '' : ` version ${s.version}`;
  const from = s.file ? ` from ${s.file}` : '';
  const counts = `${s.adds} added, ${s.changes} changed, ${s.deletes} deleted`;
  const how = [`${s.rows.toLocaleString('en')} rows`, s.rowErrors ? `${s.rowErrors} row errors` : '', s.path !== 'none' ? s.path : '', `${s.requests} requests`, `${(s.durationMs / 1000).toFixed(1)} s`]
    .filter(Boolean)
    .join(', ');
  return `${s.dataset}: ${s.result}${version}${from}: ${counts} (${how})`;
}

/** `sync <dataset> [--file F]`: one sync, then exit (0 published/unchanged, 3 held for a person, 75 try again later: the API unreachable or busy, the dataset busy; 1 failed). */
export function register(program: Command): void {
  program
    .command('sync')
    .description('sync one dataset once from an export file, then exit (3 when a guard or a person holds it, 75 when it may work later: API unreachable or busy)')
    .argument('<dataset>', 'dataset name from the configuration')
    .requiredOption('--file <path>', 'the export file to sync')
    .option('--feed <name>', "the feed whose source and mapping read the file (issue 13); default: the dataset's full feed")
    .option('--no-publish', 'stage the change as a draft and leave it for approve or the portal')
    .option('--json', 'JSON log lines on stdout, the sync.summary line last (the default when stdout is not a terminal)')
    .action(
      runAction(async (name: string, opts: { file: string; feed?: string; publish: boolean; json?: boolean }, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const human = humanOutput(opts);
        const { logger, progress } = await commandLogger(cmd, config, human);
        const { cliEngine } = await import('../engine.js');
        const cli = await cliEngine(config, logger, [name], 'sync');
        try {
          const summary = await cli.engine.sync(feedView(cli.dataset(name), opts.feed), { file: opts.file, links: ALWAYS_FOLLOW }, opts.publish === false ? { publish: false } : {});
          progress?.clear();
          if (human) process.stdout.write(`${syncSummaryLine(summary)}\n`);
          // The engine reports every failure in the summary (never thrown): say what happened on stderr, exit by result and code.
          return reportSync(summary);
        } finally {
          progress?.clear();
          await cli.close();
        }
      }),
    );
}
