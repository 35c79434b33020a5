import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'dist/cli/main.js');

/** One JSON log line of the daemon. */
export type LogLine = Record<string, unknown> & { event?: string; msg?: string };

/** The real CLI running as a child process, with its log lines parsed. */
export class DaemonProcess {
  readonly lines: LogLine[] = [];
  readonly exited: Promise<number | null>;
  readonly child: ChildProcess;
  #waiters: Array<() => void> = [];
  #stderr = '';

  constructor(args: string[], env: NodeJS.ProcessEnv, as: { uid?: number; gid?: number } = {}) {
    this.child = spawn(process.execPath, [MAIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], ...as });
    let buf = '';
    this.child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      buf += chunk;
      let i: number;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        try {
          this.lines.push(JSON.parse(line) as LogLine);
        } catch {
          this.lines.push({ msg: line });
        }
      }
      this.#waiters.splice(0).forEach((w) => w());
    });
    this.child.stderr!.setEncoding('utf8').on('data', (c: string) => (this.#stderr += c));
    this.exited = new Promise((resolve) => this.child.on('exit', (code) => {
      this.#waiters.splice(0).forEach((w) => w());
      resolve(code);
    }));
  }

  /** Lines with this event (and matching fields). */
  events(name: string, match: Record<string, unknown> = {}): LogLine[] {
    return this.lines.filter((l) => l.event === name && Object.entries(match).every(([k, v]) => l[k] === v));
  }

  /** Wait until `count` lines with this event (and fields) were logged. */
  async waitFor(name: string, match: Record<string, unknown> = {}, count = 1, timeoutMs = 20_000): Promise<LogLine> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events(name, match);
      if (found.length >= count) return found[count - 1]!;
      if (this.child.exitCode !== null || Date.now() > deadline) {
        throw new Error(
          `no ${count}× ${name} ${JSON.stringify(match)} (exit ${this.child.exitCode}); stderr: ${this.#stderr}\n` +
            this.lines.map((l) => JSON.stringify(l)).join('\n'),
        );
      }
      await new Promise<void>((r) => {
        const t = setTimeout(r, 200);
        this.#waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  /** Send a signal and wait for the exit code. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    if (this.child.exitCode === null) this.child.kill(signal);
    return this.exited;
  }
}

/** A temp folder with an inbox, a state dir, a config path and an emulator dataset with its key. */
export interface Scenario {
  dir: string;
  inbox: string;
  configPath: string;
  emu: RunningEmulator;
  datasetId: string;
  env: NodeJS.ProcessEnv;
  /** Write connector.yaml with these datasets (defaults filled in by `dataset()`). */
  writeConfig(datasets: Record<string, unknown>, extra?: Record<string, unknown>): Promise<void>;
  /** A dataset config for this scenario's emulator, inbox and key. */
  dataset(overrides?: Record<string, unknown>): Record<string, unknown>;
  /** Start `run` on this scenario's config, as another user when `as` says so (the scenario's folder must be theirs). */
  start(as?: { uid?: number; gid?: number }): DaemonProcess;
}

/** Columns of the test exports. */
export const HEADER = 'sku,name,code,stock';

/** A CSV export of `n` products (first `from`), optionally with `stockOf(i)`. */
export function exportCsv(n: number, opts: { from?: number; stock?: (i: number) => string } = {}): string {
  const rows = [HEADER];
  for (let i = opts.from ?? 1; i < (opts.from ?? 1) + n; i++) {
    rows.push(`P-${String(i).padStart(4, '0')},Product ${i},C${i},${opts.stock ? opts.stock(i) : String(i % 50)}`);
  }
  return `${rows.join('\n')}\n`;
}

/** Set up a scenario: an emulator in this process on a free port, a dataset and a key. */
export async function scenario(emu: RunningEmulator, datasetId: string): Promise<Scenario> {
  const dir = await mkdtemp(join(tmpdir(), 'dc-e2e-'));
  const inbox = join(dir, 'inbox');
  await mkdir(inbox);
  emu.emulator.addDataset({ id: datasetId });
  const key = emu.emulator.addKey({ dataset: datasetId });
  const envName = `E2E_KEY_${datasetId.replace(/[^A-Za-z0-9]/g, '_').toUpperCase()}`;
  const configPath = join(dir, 'connector.yaml');
  const s: Scenario = {
    dir,
    inbox,
    configPath,
    emu,
    datasetId,
    env: { [envName]: key },
    dataset: (overrides = {}) => ({
      api: { base_url: emu.url, dataset_id: datasetId, key: { env: envName }, retry: { max_attempts: 3, base_delay_ms: 50, max_delay_ms: 200 } },
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
      watch: { path: inbox, include: ['*.csv'], settle_ms: 250, poll_interval_ms: 50 },
      ...overrides,
    }),
    writeConfig: async (datasets, extra = {}) => {
      const doc = { state_dir: join(dir, 'state'), timezone: 'UTC', log: { level: 'info' }, ...extra, datasets };
      await writeFile(`${configPath}.tmp`, stringify(doc));
      const { rename } = await import('node:fs/promises');
      await rename(`${configPath}.tmp`, configPath);
    },
    start: (as) => new DaemonProcess(['run', '--config', configPath], s.env, as),
  };
  return s;
}

/** Start the emulator for a test file. */
export function emulator(): Promise<RunningEmulator> {
  return startEmulator({ port: 0 });
}
