import { stat } from 'node:fs/promises';
import type { Command } from 'commander';
import type { DatasetStatus } from '../../sync/status.js';
import { DISPOSE_FAILED } from '../../snapshot/waiting-files.js';
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
            all.push({ ...status, feeds: await feedFilesNow(config, ds, status.feeds), waitingFiles: await waitingFilesNow(status.waitingFiles), nextRun: first ? { schedule: first.name, type: first.type, at: first.next } : null, schedules });
          }
          if (!humanOutput(opts)) process.stdout.write(`${JSON.stringify({ datasets: all })}\n`);
          else {
            for (const s of all) process.stdout.write(`${statusLine(s, config.datasets[s.dataset]?.feeds ?? {})}\n`);
          }
          return all.some((s) => s.held) ? 3 : 0;
        } finally {
          await cli.close();
        }
      }),
    );
}

/** What `status` prints of a dataset: its engine status, with each feed's last file where it is now and its next run. */
export interface StatusOfDataset extends Omit<DatasetStatus, 'feeds'> {
  feeds: Array<DatasetStatus['feeds'][number] & { whereNow: Whereabouts | null }>;
  nextRun: { schedule: string; type: string; at: string | null } | null;
}

/** One dataset's line of the human `status` (`configured`: its feeds in the config now). */
export function statusLine(s: StatusOfDataset, configured: Record<string, unknown>): string {
  const last = s.lastSync ? `${s.lastSync.result} at ${s.lastSync.at}${refusedText(s.lastSync, s.lastSuccessAt)}` : 'never synced';
  const what = s.held ? (s.held.version === null ? 'change kept unsent' : `draft v${s.held.version}`) : '';
  const held = s.held ? `; ${s.held.kind} ${what} for ${Math.round(s.held.ageMs / 60_000)} min: ${s.held.reason}` : '';
  const next = s.nextRun ? `; next run ${s.nextRun.at} (${s.nextRun.schedule})` : '; no schedule';
  const paused = s.paused ? `; PAUSED since ${s.paused.since} (${s.paused.by}): exports wait until dataset-connector resume ${s.dataset}` : '';
  const pausedFeeds = s.pausedFeeds
    .map((f) =>
      f.feed in configured
        ? `; feed ${f.feed} PAUSED since ${f.since} (${f.by}): its exports wait until dataset-connector resume ${s.dataset} --feed ${f.feed}`
        : `; feed ${f.feed} PAUSED since ${f.since} (${f.by}) is no longer in the config: dataset-connector resume ${s.dataset} --feed ${f.feed} clears its pause`,
    )
    .join('');
  const forPerson = (code: string | null) => (code === 'HELD_OTHER_FEED' || code === 'DRAFT_PENDING' || code === 'DRAFT_MIXED') && s.held !== null;
  const kept = s.keptExportFiles
    .map(
      (k) =>
        `; export ${k.export} (feed ${k.feed}): keeps ${k.file} since ${k.since} (${k.result}${k.code ? `: ${k.code}` : ''})${k.newer > 0 ? `, ${k.newer} newer file(s) wait in the folder for it` : ''}` +
        (forPerson(k.code) ? `: it waits for a person to run dataset-connector approve ${s.dataset} or dataset-connector discard ${s.dataset}` : ''),
    )
    .join('');
  const waiting = s.waitingFiles
    .map((w) => (w.code === DISPOSE_FAILED ? `; feed ${w.feed}: ${w.file} stays in its folder since ${w.since} (${w.code}): ${w.message ?? 'it cannot be moved'}` : `; feed ${w.feed}: ${w.file} waits since ${w.since} (${w.code}): ${waitReason(w, s.held !== null)}`))
    .join('');
  const feeds = s.feeds.map((f) => `; feed ${f.feed}: ${f.file === null || f.whereNow === null ? '-' : whereaboutsText(f.file, f.whereNow)} (file time ${f.fileTime}, published ${f.publishedAt})`).join('');
  return `${s.dataset}: ${last}; ${s.records} records (${s.owned} owned) at v${s.activeVersion ?? '-'}${held}${paused}${pausedFeeds}${kept}${waiting}${feeds}${next}`;
}

/** Why a file waits: the sync's own words while the change is held; once it is not, that the daemon takes the file. */
function waitReason(w: DatasetStatus['waitingFiles'][number], heldNow: boolean): string {
  if (heldNow || w.code === 'PLAN_OPEN') return w.message ?? 'it waits for a person';
  return 'what it waited for was approved or discarded: the running daemon takes it within 5 s (dataset-connector run, if none runs)';
}

/** The waiting files still in their folder (one moved away by hand, or archived since, waits no more). */
export async function waitingFilesNow<W extends { file: string }>(waiting: readonly W[]): Promise<W[]> {
  const out: W[] = [];
  for (const w of waiting) if ((await stat(w.file).catch(() => undefined))?.isFile()) out.push(w);
  return out;
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
