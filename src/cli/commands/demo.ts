import type { Command } from 'commander';
import { fileURLToPath } from 'node:url';
import { globalOptions, runAction } from '../context.js';

/** The demo configuration shipped with the package (dist/cli/commands → config/demo.yaml). */
export const DEMO_CONFIG_PATH = fileURLToPath(new URL('../../../config/demo.yaml', import.meta.url));

/** `demo`: the daemon on config/demo.yaml with the embedded emulator; pretty logs unless --log-format says otherwise. */
export function register(program: Command): void {
  program
    .command('demo')
    .description(
      'try the connector with nothing to set up: starts an embedded emulator on 127.0.0.1:8787, watches var/inbox/ of the package ' +
        'and copies a sample export into it; drop your own CSV there too (Ctrl-C stops)',
    )
    .action(
      runAction(async (_opts: unknown, cmd: Command) => {
        const [{ loadConfig }, { runDaemon }, { createLogger }] = await Promise.all([
          import('../../config/load.js'),
          import('../../daemon/run-daemon.js'),
          import('../../log/logger.js'),
        ]);
        const g = globalOptions(cmd);
        const config = await loadConfig(DEMO_CONFIG_PATH);
        const logger = createLogger({ format: g.logFormat ?? 'pretty', level: g.logLevel ?? config.log.level });
        return runDaemon({ configPath: DEMO_CONFIG_PATH, initialConfig: config, logger, logLevelFromCli: true });
      }),
    );
}
