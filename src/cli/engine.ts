import { join } from 'node:path';
import type { Logger } from 'pino';
import { DatasetClient } from '../api/client.js';
import { systemClock, type Clock } from '../clock.js';
import { clientOptionsFor } from '../config/client-options.js';
import { unknownDataset } from '../config/errors.js';
import { resolveKey } from '../config/key.js';
import type { Config, DatasetConfig } from '../config/schema.js';
import { openStateDb, type StateDb } from '../snapshot/db.js';
import { SyncEngine } from '../sync/engine.js';

/** An engine for one CLI command: the state db, one client per dataset, closed by `close()`. */
export interface CliEngine {
  engine: SyncEngine;
  db: StateDb;
  /** The one clock (src/clock.ts) of this command: the engine's, the state db's, and the command's own stamps. */
  clock: Clock;
  dataset(name: string): DatasetConfig;
  close(): Promise<void>;
}

/**
 * How long a command waits for a dataset another process (the daemon) works
 * on before it says so and exits 75; `DATASET_CONNECTOR_LOCK_WAIT_MS` changes it.
 */
export function cliLockWaitMs(env: NodeJS.ProcessEnv = process.env): number {
  const v = Number(env.DATASET_CONNECTOR_LOCK_WAIT_MS);
  return Number.isFinite(v) && v >= 0 ? v : 10_000;
}

/** Open the state db and build an engine whose clients use each dataset's configured key; `command` names it in the dataset lock. */
export async function cliEngine(config: Config, logger: Logger, needKeys: string[], command = 'command'): Promise<CliEngine> {
  const clock = systemClock;
  const db = openStateDb(join(config.state_dir, 'state.db'), { clock });
  const clients = new Map<string, DatasetClient>();
  const keys = new Map<string, Awaited<ReturnType<typeof resolveKey>>>();
  for (const name of needKeys) {
    const ds = config.datasets[name];
    if (ds) keys.set(name, await resolveKey(ds.api.key));
  }
  const engine = new SyncEngine({
    db,
    logger,
    clock,
    lock: { label: `a dataset-connector ${command}`, waitMs: cliLockWaitMs() },
    clientFor: (ds) => {
      let c = clients.get(ds.name);
      if (!c) {
        const key = keys.get(ds.name);
        if (!key) throw new TypeError(`no key resolved for dataset ${ds.name}`);
        // The state db's window: this command and the daemon (and any other command) share the key's rate (A24).
        c = new DatasetClient(clientOptionsFor(ds, key, { logger: logger.child({ dataset: ds.name }), rateWindow: db.rateWindow }));
        clients.set(ds.name, c);
      }
      return c;
    },
  });
  return {
    engine,
    db,
    clock,
    dataset(name) {
      const ds = config.datasets[name];
      if (!ds) throw unknownDataset(name, Object.keys(config.datasets));
      return ds;
    },
    async close() {
      await Promise.all([...clients.values()].map((c) => c.close().catch(() => undefined)));
      db.close();
    },
  };
}
