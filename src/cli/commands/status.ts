import type { Command } from 'commander';
import { humanOutput, loadConfigFor, loggerFor, runAction } from '../context.js';
import type { Config, DatasetConfig } from '../../config/schema.js';
import type { WatchConfig } from '../../config/watch.js';
import { whereabouts, whereaboutsText, type Whereabouts } from '../../files/whereabouts.js';

/** `status [--json]`: per dataset the last sync, its result, snapshot size, held/staged drafts with age, next scheduled run (no network). */
export function register(program: Command): void {
  program
    .command('status')
    .description('per dataset: last sync and result, snapshot size, held or staged drafts and their age, next scheduled run (no network)')
    .option('--json', 'print one JSON object (the default when stdout is not a terminal)')
    .action(
      runAction(async (opts: { json?: boolean }, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const { cliEngine } = await import('../engine.js');
        const { nextScheduledRuns } = await import('../../triggers/next-runs.js');
        const cli = await cliEngine(config, loggerFor(cmd, config, process.stderr), []);
        try {
          const all = [];
          for (const ds of Object.values(config.datasets)) {
            const schedules = await nextScheduledRuns(ds.schedules ?? [], config.timezone);
            const first = schedules[0]?.next ? schedules[0] : null;
            const status = cli.engine.status(ds);
            all.push({ ...status, feeds: await feedFilesNow(config, ds, status.feeds), nextRun: first ? { schedule: first.name, type: first.type, at: first.next } : null, schedules });
          }
          if (!humanOutput(opts)) process.stdout.write(`${JSON.stringify({ datasets: all })}\n`);
          else {
            for (const s of all) {
              const last = s.lastSync ? `${s.lastSync.result} at ${s.lastSync.at}${refusedText(s.lastSync, s.lastSuccessAt)}` : 'never synced';
              const what = s.held ? (s.held.version === null ? 'change kept unsent' : `draft v${s.held.version}`) : '';
              const held = s.held ? `; ${s.held.kind} ${what} for ${Math.round(s.held.ageMs / 60_000)} min: ${s.held.reason}` : '';
              const next = s.nextRun ? `; next run ${s.nextRun.at} (${s.nextRun.schedule})` : '; no schedule';
              const paused = s.paused ? `; PAUSED since ${s.paused.since} (${s.paused.by}): exports wait until dataset-connector resume ${s.dataset}` : '';
              const configured = config.datasets[s.dataset]?.feeds ?? {};
              const pausedFeeds = s.pausedFeeds
                .map((f) =>
                  f.feed in configured
                    ? `; feed ${f.feed} PAUSED since ${f.since} (${f.by}): its exports wait until dataset-connector resume ${s.dataset} --feed ${f.feed}`
                    : `; feed ${f.feed} PAUSED since ${f.since} (${f.by}) is no longer in the config: dataset-connector resume ${s.dataset} --feed ${f.feed} clears its pause`,
                )
                .join('');
              const kept = s.keptExportFiles
                .map((k) => `; export ${k.export} (feed ${k.feed}): keeps ${k.file} since ${k.since} (${k.result}${k.code ? `: ${k.code}` : ''})${k.newer > 0 ? `, ${k.newer} newer file(s) wait in the folder for it` : ''}`)
                .join('');
              const feeds = s.feeds.map((f) => `; feed ${f.feed}: ${f.file === null || f.whereNow === null ? '-' : whereaboutsText(f.file, f.whereNow)} (file time ${f.fileTime}, published ${f.publishedAt})`).join('');
              process.stdout.write(`${s.dataset}: ${last}; ${s.records} records (${s.owned} owned) at v${s.activeVersion ?? '-'}${held}${paused}${pausedFeeds}${kept}${feeds}${next}\n`);
            }
          }
          return all.some((s) => s.held) ? 3 : 0;
        } finally {
          await cli.close();
        }
      }),
    );
}

/** A refused last attempt: its file and code, and the last success (the shop shows that one's data until a good file comes). */
function refusedText(last: { result: string; detail: unknown }, lastSuccessAt: string | null): string {
  if (last.result !== 'rejected') return '';
  const d = (last.detail ?? {}) as { file?: string; code?: string };
  const what = d.file ? ` (${d.file}${d.code ? `: ${d.code}` : ''})` : d.code ? ` (${d.code})` : '';
  return `${what}; last published or unchanged ${lastSuccessAt ?? 'never'}: the dataset still holds that one`;
}

/** Each feed's last file with where it is now (after: move archived it), so that a person can open it. */
export async function feedFilesNow<F extends { feed: string; file: string | null; sha256: string | null }>(config: Config, ds: DatasetConfig, feeds: readonly F[]): Promise<Array<F & { whereNow: Whereabouts | null }>> {
  const out: Array<F & { whereNow: Whereabouts | null }> = [];
  for (const f of feeds) out.push({ ...f, whereNow: f.file === null ? null : await whereabouts(f.file, f.sha256, watchOfFeed(config, ds, f.feed)) });
  return out;
}

/** The folder a feed's files come from: its own watch, or the watch of the export it takes (none: a feed no longer configured, or without a folder). */
function watchOfFeed(config: Config, ds: DatasetConfig, feed: string): WatchConfig | undefined {
  const f = ds.feeds[feed];
  if (!f) return undefined;
  return f.watch ?? (f.from === undefined ? undefined : config.exports[f.from]?.watch);
}
