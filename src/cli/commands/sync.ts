import type { Command } from 'commander';
import type { SyncSummary } from '../../sync/outcome.js';
import { commandLogger, humanOutput, loadConfigFor, runAction } from '../context.js';
import { reportSync } from '../report-error.js';
import { feedView } from '../../feeds/view.js';
import { takersOf } from '../../config/exports.js';
import type { Config } from '../../config/schema.js';
import { ConnectorError } from '../../errors.js';
import type { Taker } from '../../snapshot/export-takers.js';
import { worstExitCode } from '../exit-codes.js';
import { unmatchedLine } from '../unmatched-line.js';
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
  const unmatched = unmatchedLine(s.feed, s.file, true);
  return `${s.dataset}: ${s.result}${version}${from}: ${counts} (${how})${unmatched ? `; ${unmatched}` : ''}`;
}

/** `sync <dataset> --file F` or `sync --export E --file F`: one sync (or one per dataset taking the export), then exit (0 published/unchanged, 3 held for a person, 75 try again later: the API unreachable or busy, the dataset busy; 1 failed; the worst over the datasets). */
export function register(program: Command): void {
  program
    .command('sync')
    .description('sync one dataset once from an export file, then exit (3 when a guard or a person holds it, 75 when it may work later: API unreachable or busy)')
    .argument('[dataset]', 'dataset name from the configuration (not with --export)')
    .requiredOption('--file <path>', 'the export file to sync')
    .option('--feed <name>', "the feed whose source and mapping read the file (issue 13); default: the dataset's full feed")
    .option('--export <name>', 'a shared export (exports:): sync every dataset taking it from the file, as the daemon does, except those already done with this very file')
    .option('--no-publish', 'stage the change as a draft and leave it for approve or the portal')
    .option('--json', 'JSON log lines on stdout, the sync.summary line last (the default when stdout is not a terminal)')
    .action(
      runAction(async (name: string | undefined, opts: { file: string; feed?: string; export?: string; publish: boolean; json?: boolean }, cmd: Command) => {
        if ((name === undefined) === (opts.export === undefined) || (opts.export !== undefined && opts.feed !== undefined)) {
          const why = opts.export !== undefined && name === undefined ? '--feed goes with a dataset, not with --export' : 'name a dataset, or --export <name> to sync every dataset taking a shared export (not both)';
          throw new ConnectorError('BAD_ARGUMENTS', why, { action: 'reject' });
        }
        const config = await loadConfigFor(cmd);
        const human = humanOutput(opts);
        const { logger, progress } = await commandLogger(cmd, config, human);
        const { cliEngine } = await import('../engine.js');
        const takers = opts.export === undefined ? null : exportTakers(config, opts.export);
        const cli = await cliEngine(config, logger, takers ? [...new Set(takers.map((t) => t.dataset))] : [name!], 'sync');
        const publish = opts.publish === false ? { publish: false as const } : {};
        try {
          if (takers) {
            const { syncExport } = await import('../sync-export.js');
            const summaries = await syncExport(cli, config, opts.export!, takers, opts.file, publish, logger);
            progress?.clear();
            if (human) for (const s of summaries) process.stdout.write(`${syncSummaryLine(s)}\n`);
            return worstExitCode(summaries.map((s) => reportSync(s)));
          }
          const summary = await cli.engine.sync(feedView(cli.dataset(name!), opts.feed), { file: opts.file, links: ALWAYS_FOLLOW }, publish);
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

/** The feeds taking export `name` (UNKNOWN_EXPORT, a usage error, when there is no such export). */
function exportTakers(config: Config, name: string): Taker[] {
  if (!(name in config.exports)) {
    throw new ConnectorError('UNKNOWN_EXPORT', `no export "${name}" in the configuration (known: ${Object.keys(config.exports).join(', ') || 'none'})`, { action: 'reject', context: { setting: 'exports' } });
  }
  return takersOf(config.datasets, name);
}
