import type { DatasetConfig } from '../../config/schema.js';
import type { Command } from 'commander';
import { ConnectorError } from '../../errors.js';
import { commandLogger, humanOutput, loadConfigFor, onDataset, runAction } from '../context.js';
import { reportSync } from '../report-error.js';
import { historyPoint, type PointOptions } from '../history-point.js';

/**
 * `restore <dataset> --to-version N | --to-time T`: publish the state of that
 * point again, through the same planner, guards and journal as a sync (exit
 * codes as sync: 0 published or unchanged, 3 held for a person, 75 try later, 1 failed).
 */
export function register(program: Command): void {
  program
    .command('restore')
    .description('bring the published dataset back to a version or time of its history, as a sync would publish it (plan --restore shows it first; held like any change)')
    .argument('<dataset>', 'dataset name from the configuration')
    .option('--to-version <n>', 'the version to bring back (as `why` and `status` show them)')
    .option('--to-time <iso>', 'bring back what was published at this time, e.g. 2026-11-24T09:00:00+09:00')
    .option('--pause', 'pause the dataset first, so that the next export does not undo the restore (resume takes exports again)')
    .option('--no-publish', 'stage the change as a draft and leave it for approve or the portal')
    .option('--json', 'JSON log lines on stdout, the sync.summary line last (the default when stdout is not a terminal)')
    .action(
      runAction(async (name: string, opts: PointOptions & { pause?: boolean; publish: boolean; json?: boolean }, cmd: Command) => {
        const point = historyPoint(opts);
        const config = await loadConfigFor(cmd);
        const human = humanOutput(opts);
        const { logger, progress } = await commandLogger(cmd, config, human);
        const { cliEngine } = await import('../engine.js');
        const { syncSummaryLine } = await import('./sync.js');
        const cli = await cliEngine(config, logger, [name], 'restore');
        try {
          const ds = cli.dataset(name);
          if (opts.pause) cli.engine.pause(ds, 'restore --pause');
          const summary = await onDataset(name, () => cli.engine.restore(ds, point, opts.publish === false ? { publish: false } : {}));
          const paused = cli.db.snapshot(ds.name).paused();
          if (summary.result === 'published' || summary.result === 'held' || summary.result === 'staged') {
            summary.warnings.push(restoreAdvice(ds, paused !== null, cli.engine.status(ds).pausedFeeds.map((f) => f.feed)));
          }
          progress?.clear();
          if (human) {
            process.stdout.write(`${syncSummaryLine(summary)}\n`);
            for (const w of summary.warnings.slice(-1)) process.stdout.write(`  ${w}\n`);
          } else process.stdout.write(`${JSON.stringify({ event: 'restore.summary', ...summary, paused: paused !== null })}\n`);
          return reportSync(summary);
        } catch (err) {
          if (err instanceof ConnectorError && err.context.dataset === undefined) err.context.dataset = name;
          throw err;
        } finally {
          progress?.clear();
          await cli.close();
        }
      }),
    );
}

/** What keeps the next export from undoing a restore, given the pauses in force: the feeds already paused are named, only the others are to pause. */
export function restoreAdvice(ds: DatasetConfig, paused: boolean, pausedFeeds: readonly string[]): string {
  if (paused) return `${ds.name} is paused: exports wait in the folder until dataset-connector resume ${ds.name} (the next one would undo this restore unless fixed)`;
  const feeds = Object.keys(ds.feeds);
  const running = feeds.filter((f) => !pausedFeeds.includes(f));
  const already = feeds.filter((f) => pausedFeeds.includes(f));
  if (already.length === 0) {
    return (
      `the next export of ${ds.name} would undo this restore: dataset-connector pause ${ds.name} until the export is fixed, then resume` +
      (feeds.length > 1 ? ` (or pause only the feed whose export went wrong: dataset-connector pause ${ds.name} --feed <${feeds.join('|')}>)` : '')
    );
  }
  const said = `feed${already.length === 1 ? '' : 's'} ${already.join(', ')} of ${ds.name} already paused`;
  if (running.length === 0) return `${said}: their exports wait until dataset-connector resume ${ds.name} --feed <${already.join('|')}>`;
  return `${said}; the next export of ${running.join(' or ')} would undo this restore if it went wrong: pause ${running.length === 1 ? 'it' : 'them'} too with ${running.map((f) => `dataset-connector pause ${ds.name} --feed ${f}`).join(' and ')}`;
}
