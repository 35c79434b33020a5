import type { Command } from 'commander';
import { humanOutput, loadConfigFor, loggerFor, runAction } from '../context.js';

/** `resume <dataset>`: take exports again after `pause`; the daemon takes the newest one waiting in the folder. */
export function register(program: Command): void {
  program
    .command('resume')
    .description('take exports for a paused dataset again; the running daemon then takes the newest export waiting in the folder')
    .argument('<dataset>', 'dataset name from the configuration')
    .option('--json', 'print one JSON object (the default when stdout is not a terminal)')
    .action(
      runAction(async (name: string, opts: { json?: boolean }, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const { cliEngine } = await import('../../sync/cli-engine.js');
        const cli = await cliEngine(config, loggerFor(cmd, config, process.stderr), []);
        try {
          const ds = cli.dataset(name);
          const was = cli.engine.resumeExports(ds);
          const text = was ? `${ds.name}: resumed (paused since ${new Date(was.at).toISOString()}); exports are taken again` : `${ds.name}: was not paused`;
          process.stdout.write(humanOutput(opts) ? `${text}\n` : `${JSON.stringify({ dataset: ds.name, paused: false, wasPaused: was !== null })}\n`);
          return 0;
        } finally {
          await cli.close();
        }
      }),
    );
}
