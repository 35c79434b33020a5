import type { Command } from 'commander';
import { loadConfigFor, loggerFor, runAction } from '../context.js';

/** `status [--json]`: per dataset the last sync, its result, snapshot size, held/staged drafts with age (no network). */
export function register(program: Command): void {
  program
    .command('status')
    .description('per dataset: last sync and result, snapshot size, held or staged drafts and their age (no network)')
    .option('--json', 'print one JSON object')
    .action(
      runAction(async (opts: { json?: boolean }, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const { cliEngine } = await import('../../sync/cli-engine.js');
        const cli = await cliEngine(config, loggerFor(cmd, config, process.stderr), []);
        try {
          const all = Object.values(config.datasets).map((ds) => cli.engine.status(ds));
          if (opts.json) process.stdout.write(`${JSON.stringify({ datasets: all })}\n`);
          else {
            for (const s of all) {
              const last = s.lastSync ? `${s.lastSync.result} at ${s.lastSync.at}` : 'never synced';
              const held = s.held ? `; ${s.held.kind} draft v${s.held.version} for ${Math.round(s.held.ageMs / 60_000)} min: ${s.held.reason}` : '';
              process.stdout.write(`${s.dataset}: ${last}; ${s.records} records (${s.owned} owned) at v${s.activeVersion ?? '-'}${held}\n`);
            }
          }
          return all.some((s) => s.held) ? 3 : 0;
        } finally {
          await cli.close();
        }
      }),
    );
}
