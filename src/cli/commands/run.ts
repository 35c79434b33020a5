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
    .action(
      runAction(async (_opts: unknown, cmd: Command) => {
        const config = await loadConfigFor(cmd);
        const { runDaemon } = await import('../../daemon/run-daemon.js');
        const g = globalOptions(cmd);
        return runDaemon({
          configPath: g.config,
          initialConfig: config,
          logger: loggerFor(cmd, config),
          logLevelFromCli: g.logLevel !== undefined,
        });
      }),
    );
}
