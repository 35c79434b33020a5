import type { Command } from 'commander';
import { loadConfigFor, loggerFor, runAction } from '../context.js';

/** What a person can do with a held change: the engine method of the same name. */
export type HeldAction = 'approve' | 'discard';

/**
 * Register `approve <dataset>` or `discard <dataset>`: run the engine's action
 * on the held change under the dataset lock and print one line of what it did;
 * 0 when published or discarded, 1 when not (expired, left staged), and for a
 * thrown error the code reportError gives (75 when the API cannot be reached).
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
        const cli = await cliEngine(config, loggerFor(cmd, config, process.stderr), [name], action);
        try {
          const ds = cli.dataset(name);
          const r = action === 'approve' ? await cli.engine.approve(ds) : await cli.engine.discard(ds);
          process.stdout.write(`${name}: ${r.action}${r.version === null ? '' : ` (version ${r.version})`}: ${r.message}\n`);
          return r.action === 'published' || r.action === 'discarded' ? 0 : 1;
        } finally {
          await cli.close();
        }
      }),
    );
}
