import type { Command } from 'commander';
import { ExitCode } from '../exit-codes.js';
// The operator named the file: a link is followed.
import { ALWAYS_FOLLOW } from '../../sources/open-file.js';
import type { PlanPreview } from '../../sync/executor/preview.js';
import { feedView } from '../../feeds/view.js';
import { refuseFeedOption } from '../feed-option.js';
import { sampleLines } from '../../sync/core/value-guards.js';
import { ConnectorError } from '../../errors.js';
import { historyPoint, type PointOptions } from '../history-point.js';
import { commandLogger, humanOutput, loadConfigFor, onDataset, runAction } from '../context.js';
import { rowErrorLines } from '../report-error.js';
import { unmatchedLine } from '../unmatched-line.js';

/** The plan as lines for a person. */
export function planLines(p: PlanPreview): string[] {
  const restore = p.file.startsWith('restore of ');
  const out: string[] = [restore ? `${p.file} (${p.rows} records)` : `file: ${p.file} (${p.rows} rows, ${p.rowErrors} row errors)`];
  if (p.paused) {
    out.push(
      restore
        ? `PAUSED since ${p.paused.since} (${p.paused.by}): exports wait; a restore still publishes (a person asks for it)`
        : p.paused.feed
          ? `feed ${p.paused.feed} PAUSED since ${p.paused.since} (${p.paused.by}): a sync of its files would publish nothing (FEED_PAUSED) until ${p.paused.resume}`
          : `PAUSED since ${p.paused.since} (${p.paused.by}): a sync would publish nothing (DATASET_PAUSED) until ${p.paused.resume}`,
    );
  }
  if (p.resumes) {
    out.push(p.resumes.message);
    return out;
  }
  if (p.stopped) {
    out.push(`a sync would stop before planning: ${p.stopped.code}: ${p.stopped.message}`);
    return out;
  }
  if (p.rejected || !p.plan) {
    out.push(`rejected: ${p.rejected}`);
    return out;
  }
  const c = p.plan.counts;
  out.push(`changes: ${c.adds} add, ${c.changes} change, ${c.deletes} delete (${c.unchanged} unchanged)`);
  out.push(`records: ${c.snapshot} now → ${c.result} after; owned ${c.owned}, not owned ${c.notOwned} (left alone)`);
  const unmatched = unmatchedLine(p.feed, p.file, false);
  if (unmatched) out.push(unmatched);
  out.push(`path: ${p.plan.path} — ${p.plan.reason}`);
  for (const op of p.plan.operations.slice(0, 10)) out.push(`  ${op.op} ${op.record_id}`);
  if (p.discardsHeld) out.push(p.discardsHeld);
  const held = p.plan.guards.results.filter((r) => r.holds);
  out.push(held.length ? `guards that would hold it: ${held.map((r) => `${r.guard} (${r.message})`).join('; ')}` : 'guards: none would hold it');
  for (const r of held.filter((x) => x.samples?.length)) out.push(`  ${r.guard} ${r.field}, for example:`, ...sampleLines(r));
  for (const w of p.warnings ?? []) out.push(`warning: ${w}`);
  return out;
}

/** `plan <dataset> --file F`: counts, first changes, the chosen path and why, guards that would hold; sends nothing but reads. */
export function register(program: Command): void {
  program
    .command('plan')
    .description('show what a sync would do (counts, first changes, path and why, guards); sends nothing but reads')
    .argument('<dataset>', 'dataset name from the configuration')
    .option('--file <path>', 'the export file to plan from')
    .option('--feed <name>', "the feed whose source and mapping read the file (issue 13); default: the dataset's full feed")
    .option('--restore', 'plan a restore instead (with --to-version or --to-time): what `restore` would send')
    .option('--to-version <n>', 'with --restore: the version to bring back')
    .option('--to-time <iso>', 'with --restore: bring back what was published at this time')
    .option('--no-publish', 'plan as `sync --no-publish` (or `restore --no-publish`) would: stage the change and leave it for approve or the portal')
    .option('--json', 'print the plan as JSON (the default when stdout is not a terminal)')
    .action(
      runAction(async (name: string, opts: PointOptions & { file?: string; feed?: string; restore?: boolean; json?: boolean; publish: boolean }, cmd: Command) => {
        if ((opts.restore === true) === (opts.file !== undefined)) {
          throw new ConnectorError('POINT_INVALID', 'give --file <export> (the export to plan from), or --restore with --to-version <n> or --to-time <iso time>', { action: 'reject' });
        }
        const point = opts.restore ? historyPoint(opts) : null;
        const config = await loadConfigFor(cmd);
        const human = humanOutput(opts);
        const { logger, progress } = await commandLogger(cmd, config, human, undefined, process.stderr);
        const { cliEngine } = await import('../engine.js');
        const cli = await cliEngine(config, logger, [name], 'plan');
        try {
          if (opts.feed !== undefined) refuseFeedOption(cli.dataset(name), 'plan');
          const ds = feedView(cli.dataset(name), opts.feed);
          const p = await onDataset(name, () =>
            point ? cli.engine.planRestore(ds, point, { publish: opts.publish }) : cli.engine.plan(ds, opts.file!, ALWAYS_FOLLOW, { publish: opts.publish }),
          );
          progress?.clear();
          process.stdout.write(human ? `${planLines(p).join('\n')}\n` : `${JSON.stringify(p)}\n`);
          // A file a sync would reject: the plan says so, and so does the exit code (1, as preview and sync do).
          if (!p.rejected) return ExitCode.OK;
          process.stderr.write(`rejected [${p.rejectedCode ?? 'no code'}] (dataset ${name}, file ${p.file}): ${p.rejected}\n`);
          for (const line of rowErrorLines(p)) process.stderr.write(`${line}\n`);
          const feed = opts.feed ? ` --feed ${opts.feed}` : '';
          process.stderr.write(`  a sync would publish nothing from this export; dataset-connector preview --dataset ${name}${feed} --file ${p.file} shows every row error\n`);
          return ExitCode.FAILURE;
        } finally {
          progress?.clear();
          await cli.close();
        }
      }),
    );
}
