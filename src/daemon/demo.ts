import { copyFile, mkdir, mkdtemp, readdir, rename } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { startEmulator, type RunningEmulator } from '../emulator/server.js';
import { generateDatasetKey } from '../emulator/keys.js';
import { event } from '../log/events.js';
import type { DemoConfig } from '../config/demo.js';

/** A running demo: the embedded emulator and the config to serve. */
export interface Demo {
  emulator: RunningEmulator;
  /** The config with state_dir moved to a fresh temporary folder. */
  config: Config;
  /**
   * A reloaded config (SIGHUP): create in the emulator the datasets and keys it
   * does not have yet, as the start did, so an added dataset (or a new
   * dataset_id or key variable) is served. Sample files are not copied again.
   */
  provision(config: Config): void;
}

/**
 * Demo mode: start the embedded emulator, create each dataset in it with a key
 * made up now (put in the dataset's key env var; keys never sit in YAML), point
 * state at a fresh folder (the emulator starts empty each time, so old state
 * would be wrong), and copy the sample export into each watched folder.
 */
export async function startDemo(config: Config, demo: DemoConfig, logger: Logger, env: NodeJS.ProcessEnv = process.env): Promise<Demo> {
  const emulator = await startEmulator({ port: demo.emulator_port, host: '127.0.0.1' });
  const stateDir = await mkdtemp(join(tmpdir(), 'dataset-connector-demo-'));
  provisionDatasets(emulator, config, env, logger);
  logger.info(event('emulator.started', { url: emulator.url, state_dir: stateDir, datasets: Object.keys(config.datasets) }), 'embedded emulator started');
  if (demo.sample_export_dir) await copySamples(config, resolve(demo.sample_export_dir), logger);
  return {
    emulator,
    config: { ...config, state_dir: stateDir },
    provision: (next) => {
      for (const name of provisionDatasets(emulator, next, env, logger)) {
        logger.info(event('demo.dataset_added', { dataset: name, url: emulator.url }), 'dataset created in the embedded emulator');
      }
    },
  };
}

/**
 * Create each dataset of `config` the emulator lacks, and register its key
 * (made up when its env var is unset) unless the emulator already has an
 * entry for that key, live or not. Returns the names of the datasets created.
 */
function provisionDatasets(emulator: RunningEmulator, config: Config, env: NodeJS.ProcessEnv, logger: Logger): string[] {
  const created: string[] = [];
  for (const ds of Object.values(config.datasets)) {
    const id = ds.api.dataset_id;
    if (!emulator.emulator.datasets.has(id)) {
      emulator.emulator.addDataset({ id, name: `${ds.name} (demo)` });
      created.push(ds.name);
    }
    const envName = ds.api.key.env;
    if (envName === undefined) {
      logger.warn(event('emulator.started', { dataset: ds.name, code: 'DEMO_KEY_ENV_MISSING' }), 'demo datasets need key: {env: NAME}');
      continue;
    }
    const key = (env[envName] ??= generateDatasetKey());
    // Any entry for this key is kept as it is: re-adding it would bring a revoked or grace-ended key back to life.
    const known = emulator.emulator.keys.list().some((k) => k.key === key);
    if (!known) emulator.emulator.addKey({ dataset: id, key });
  }
  return created;
}

/** Copy each sample file into every watched folder (through a dot-name, so the watcher sees it whole). */
async function copySamples(config: Config, from: string, logger: Logger): Promise<void> {
  const names = (await readdir(from, { withFileTypes: true })).filter((e) => e.isFile() && !e.name.startsWith('.')).map((e) => e.name);
  for (const ds of Object.values(config.datasets)) {
    if (!ds.watch) continue;
    const dir = resolve(ds.watch.path);
    await mkdir(dir, { recursive: true });
    for (const name of names) {
      const tmp = join(dir, `.${name}.copying`);
      await copyFile(join(from, name), tmp);
      await rename(tmp, join(dir, name));
      logger.info(event('demo.sample_copied', { dataset: ds.name, file: join(dir, name) }), 'sample export copied');
    }
  }
}
