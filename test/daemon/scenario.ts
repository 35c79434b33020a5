import { mkdir, mkdtemp, rename, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';

// What the daemon tests (the Service in this process, service-harness.ts) and
// the end-to-end tests (the built CLI as a child, ../e2e/harness.ts) share:
// a scenario folder with a dataset on the emulator, its config, exports and log lines.

/** One JSON log line of the daemon. */
export type LogLine = Record<string, unknown> & { event?: string; msg?: string };

/** Lines of `event` whose fields match. */
export function events(lines: readonly LogLine[], name: string, match: Record<string, unknown> = {}): LogLine[] {
  return lines.filter((l) => l.event === name && Object.entries(match).every(([k, v]) => l[k] === v));
}

/** Columns of the test exports. */
export const HEADER = 'sku,name,code,stock';

/** How the rows of exportCsv are filled. */
export interface ExportOptions {
  /** Number of the first product (default 1). */
  from?: number;
  /** Every row's stock, or the stock of row `i` (default i % 50). */
  stock?: number | ((i: number) => string);
}

/** A CSV export of `n` products P-0001…; a number as second argument is every row's stock. */
export function exportCsv(n: number, opts: number | ExportOptions = {}): string {
  const { from = 1, stock = (i: number) => String(i % 50) } = typeof opts === 'number' ? { stock: opts } : opts;
  const rows = [HEADER];
  for (let i = from; i < from + n; i++) {
    rows.push(`P-${String(i).padStart(4, '0')},Product ${i},C${i},${typeof stock === 'number' ? stock : stock(i)}`);
  }
  return `${rows.join('\n')}\n`;
}

/** Waits and retries of a scenario's dataset: short in process, longer for a child process. */
export interface ScenarioTiming {
  /** Prefix of the temp folder. */
  prefix: string;
  /** Environment variable that holds the dataset key. */
  keyEnv: string;
  retry: { max_attempts: number; base_delay_ms: number; max_delay_ms: number };
  settleMs: number;
  pollMs: number;
  /** Top-level settings every config of the scenario gets (e.g. log). */
  defaults?: Record<string, unknown>;
}

/** A temp folder with an inbox, a dataset on the emulator with its key, and a config writer. */
export interface Scenario {
  dir: string;
  inbox: string;
  configPath: string;
  emu: RunningEmulator;
  datasetId: string;
  env: NodeJS.ProcessEnv;
  /** A dataset config for this scenario's emulator, inbox and key, with overrides. */
  dataset(overrides?: Record<string, unknown>): Record<string, unknown>;
  /** Write connector.yaml with these datasets (through a rename, so a reload never reads half a file). */
  writeConfig(datasets: Record<string, unknown>, extra?: Record<string, unknown>): Promise<void>;
}

/** Set up a scenario on `emu`: dataset `datasetId` and its key in env `timing.keyEnv`. */
export async function scenario(emu: RunningEmulator, datasetId: string, timing: ScenarioTiming): Promise<Scenario> {
  const dir = await mkdtemp(join(tmpdir(), timing.prefix));
  const inbox = join(dir, 'inbox');
  await mkdir(inbox);
  emu.emulator.addDataset({ id: datasetId });
  const key = emu.emulator.addKey({ dataset: datasetId });
  const configPath = join(dir, 'connector.yaml');
  return {
    dir,
    inbox,
    configPath,
    emu,
    datasetId,
    env: { [timing.keyEnv]: key },
    dataset: (overrides = {}) => ({
      api: { base_url: emu.url, dataset_id: datasetId, key: { env: timing.keyEnv }, retry: timing.retry },
      source: { type: 'csv' },
      mapping: {
        fields: {
          record_id: 'sku',
          display_name: 'name',
          api_value: 'code',
          'attributes.stock': { column: 'stock', transforms: [{ integer: {} }] },
        },
      },
      policy: { staging: false },
      watch: { path: inbox, include: ['*.csv'], settle_ms: timing.settleMs, poll_interval_ms: timing.pollMs },
      ...overrides,
    }),
    async writeConfig(datasets, extra = {}) {
      const doc = { state_dir: join(dir, 'state'), timezone: 'UTC', ...timing.defaults, ...extra, datasets };
      await writeFile(`${configPath}.tmp`, stringify(doc));
      await rename(`${configPath}.tmp`, configPath);
    },
  };
}

/** A TCP port free on 127.0.0.1 now (health.listen refuses port 0). */
export async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise((r) => srv.close(r));
  return port;
}

/** For a describe block: one emulator for its tests, started before them and closed after them. */
export function emulatorFixture(): { readonly emu: RunningEmulator } {
  let emu: RunningEmulator | undefined;
  beforeAll(async () => {
    emu = await startEmulator({ port: 0 });
  });
  afterAll(async () => {
    await emu?.close();
  });
  return {
    get emu() {
      if (!emu) throw new Error('the emulator starts in beforeAll');
      return emu;
    },
  };
}
