import type { Command } from 'commander';
import { loadConfigFor, loggerFor, runAction } from '../context.js';

/** `discard <dataset>`: discard the held change's draft. */
export function register(program: Command): void {
  program
    .command('discard')
    .description('drop the change a guard held (discard its draft)')
    .argument('<dataset>', 'dataset name from the configuration')
    .action(
      runAction(async (name: string, _opts: unknown, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const { cliEngine } = await import('../../sync/cli-engine.js');
        const cli = await cliEngine(config, loggerFor(cmd, config, process.stderr), [name], 'discard');
        try {
          const r = await cli.engine.discard(cli.dataset(name));
          process.stdout.write(`${name}: ${r.action}${r.version === null ? '' : ` (version ${r.version})`}: ${r.message}\n`);
          return r.action === 'published' || r.action === 'discarded' ? 0 : 1;
        } finally {
          await cli.close();
        }
      }),
    );
}
