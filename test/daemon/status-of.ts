import pino from 'pino';
import { loadConfig } from '../../src/config/load.js';
import { cliEngine } from '../../src/cli/engine.js';
import { statusLine, waitingFilesNow } from '../../src/cli/commands/status.js';

/** `status` of one dataset as the CLI prints it, beside the running daemon. */
export async function statusOf(configPath: string, dataset: string): Promise<string> {
  const config = await loadConfig(configPath);
  const ds = config.datasets[dataset]!;
  const cli = await cliEngine(config, pino({ level: 'silent' }), []);
  try {
    const st = cli.engine.status(ds);
    return statusLine({ ...st, waitingFiles: await waitingFilesNow(st.waitingFiles), feeds: [], nextRun: null }, ds.feeds);
  } finally {
    await cli.close();
  }
}
