import type { Command } from 'commander';
import { loadConfigFor, loggerFor, runAction } from '../context.js';

/** `approve <dataset>`: publish the held change with exactly the flags its guards need. */
export function register(program: Command): void {
  program
    .command('approve')
    .description('publish the change a guard held, with only the allow flag it needs')
    .argument('<dataset>', 'dataset name from the configuration')
    .action(
      runAction(async (name: string, _opts: unknown, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const { cliEngine } = await import('../../sync/cli-engine.js');
        const cli = await cliEngine(config, loggerFor(cmd, config, process.stderr), [name], 'approve');
        try {
          const r = await cli.engine.approve(cli.dataset(name));
          process.stdout.write(`${name}: ${r.action}${r.version === null ? '' : ` (version ${r.version})`}: ${r.message}\n`);
          return r.action === 'published' || r.action === 'discarded' ? 0 : 1;
        } finally {
          await cli.close();
        }
      }),
    );
}
