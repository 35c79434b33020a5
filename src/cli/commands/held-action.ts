import type { Command } from 'commander';
import type { HeldAction } from '../held-report.js';
import { loadConfigFor, loggerFor, onDataset, runAction } from '../context.js';

export type { HeldAction };

/**
 * Register `approve <dataset>` or `discard <dataset>`: run the engine's action
 * on the held change under the dataset lock and say what it did, with the
 * exit code of the README's table (held-report.ts); for a thrown error the
 * code reportError gives (75 when the API cannot be reached or the daemon
 * works on the dataset).
 */
export function registerHeldAction(program: Command, action: HeldAction, description: string): void {
  program
    .command(action)
    .description(description)
    .argument('<dataset>', 'dataset name from the configuration')
    .action(
      runAction(async (name: string, _opts: unknown, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const { cliEngine } = await import('../../sync/cli-engine.js');
        const { heldResultReport, nothingHeldReport, printHeldReport } = await import('../held-report.js');
        const cli = await cliEngine(config, loggerFor(cmd, config, process.stderr), [name], action);
        try {
          const ds = cli.dataset(name);
          let report;
          try {
            report = heldResultReport(name, await onDataset(name, () => (action === 'approve' ? cli.engine.approve(ds) : cli.engine.discard(ds))));
          } catch (err) {
            report = nothingHeldReport(action, name, err);
            if (!report) throw err;
          }
          return printHeldReport(report);
        } finally {
          await cli.close();
        }
      }),
    );
}
