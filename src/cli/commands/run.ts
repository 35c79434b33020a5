import type { Command } from 'commander';
import { globalOptions, loadConfigFor, loggerFor, runAction } from '../context.js';

/** `run`: the daemon (watched folders, schedules, health listener); SIGHUP reloads, SIGTERM stops gracefully. */
export function register(program: Command): void {
  program
    .command('run')
    .description(
      'run the connector as a service: watch export folders, run schedules, sync each dataset; ' +
        'SIGHUP reloads the configuration, SIGTERM or SIGINT stops after the running sync step',
    )
    .option('--once', 'take the exports waiting in the watched folders, run nothing scheduled, then exit with the sync exit codes')
    .action(
      runAction(async (opts: { once?: boolean }, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const g = globalOptions(cmd);
        if (opts.once) {
          const { runOnce } = await import('../run-once.js');
          return runOnce({ configPath: g.config, initialConfig: config, logger: loggerFor(cmd, config), logLevelFromCli: g.logLevel !== undefined });
        }
        const { runDaemon } = await import('../../daemon/run-daemon.js');
        return runDaemon({
          configPath: g.config,
          initialConfig: config,
          logger: loggerFor(cmd, config),
          logLevelFromCli: g.logLevel !== undefined,
        });
      }),
    );
}
