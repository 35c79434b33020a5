import type { Command } from 'commander';
import { humanOutput, loadConfigFor, loggerFor, runAction } from '../context.js';

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
            all.push({ ...cli.engine.status(ds), nextRun: first ? { schedule: first.name, type: first.type, at: first.next } : null, schedules });
          }
          if (!humanOutput(opts)) process.stdout.write(`${JSON.stringify({ datasets: all })}\n`);
          else {
            for (const s of all) {
              const last = s.lastSync ? `${s.lastSync.result} at ${s.lastSync.at}` : 'never synced';
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
              const feeds = s.feeds.map((f) => `; feed ${f.feed}: ${f.file ?? '-'} (file time ${f.fileTime}, published ${f.publishedAt})`).join('');
              process.stdout.write(`${s.dataset}: ${last}; ${s.records} records (${s.owned} owned) at v${s.activeVersion ?? '-'}${held}${paused}${pausedFeeds}${feeds}${next}\n`);
            }
          }
          return all.some((s) => s.held) ? 3 : 0;
        } finally {
          await cli.close();
        }
      }),
    );
}
