import { createServer } from 'node:net';
import { mkdir, mkdtemp, rename, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { stringify } from 'yaml';
import type { Timers } from '../../src/daemon/timers.js';
import type { RunningEmulator } from '../../src/emulator/server.js';

/** One JSON log line. */
export type Line = Record<string, unknown> & { event?: string; msg?: string };

/** A pino logger whose lines the test reads. */
export function capture(): { logger: pino.Logger; lines: Line[]; raw: () => string } {
  let raw = '';
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk, _enc, cb) {
      raw += String(chunk);
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l) as Line);
      cb();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines, raw: () => raw };
}

/** Wait (polling every 20 ms, at most 20 s) until `find` returns something. */
export async function until<T>(find: () => T | undefined | false | Promise<T | undefined | false>, what: string, lines?: Line[]): Promise<T> {
  for (const deadline = Date.now() + 20_000; ; ) {
    const found = await find();
    if (found !== undefined && found !== false) return found;
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}\n${(lines ?? []).map((l) => JSON.stringify(l)).join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Lines of `event` whose fields match. */
export function events(lines: Line[], name: string, match: Record<string, unknown> = {}): Line[] {
  return lines.filter((l) => l.event === name && Object.entries(match).every(([k, v]) => l[k] === v));
}

/** Wait for the `count`th line of `event` matching `match`. */
export function waitEvent(lines: Line[], name: string, match: Record<string, unknown> = {}, count = 1): Promise<Line> {
  return until(() => events(lines, name, match)[count - 1], `${count}× ${name} ${JSON.stringify(match)}`, lines);
}

/** Timers fired by the test: nothing runs until `fire` says so. */
export class ManualTimers implements Timers {
  readonly pending: Array<{ ms: number; fn: () => void; label: string }> = [];

  after(ms: number, fn: () => void, label: string): () => void {
    const t = { ms, fn, label };
    this.pending.push(t);
    return () => {
      const i = this.pending.indexOf(t);
      if (i >= 0) this.pending.splice(i, 1);
    };
  }

  /** Labels of the waits pending now. */
  labels(): string[] {
    return this.pending.map((t) => t.label);
  }

  /** Run (and remove) every pending wait with this label; returns how many ran. */
  fire(label: string): number {
    const due = this.pending.filter((t) => t.label === label);
    for (const t of due) this.pending.splice(this.pending.indexOf(t), 1);
    for (const t of due) t.fn();
    return due.length;
  }
}

/** A CSV export of `n` products, every stock `stock`. */
export function exportCsv(n: number, stock = 1): string {
  const rows = ['sku,name,code,stock'];
  for (let i = 1; i <= n; i++) rows.push(`P-${String(i).padStart(4, '0')},Product ${i},C${i},${stock}`);
  return `${rows.join('\n')}\n`;
}

/** Write through a dot-name and rename, as a POS writing by rename would; `mtimeMs` sets the modification time first. */
export async function drop(dir: string, name: string, text: string, mtimeMs?: number): Promise<string> {
  const tmp = join(dir, `.${name}.tmp`);
  await writeFile(tmp, text);
  if (mtimeMs !== undefined) await utimes(tmp, mtimeMs / 1000, mtimeMs / 1000);
  await rename(tmp, join(dir, name));
  return join(dir, name);
}

/** A temp folder with an inbox, a dataset on the emulator and its key, and a config writer. */
export interface ServiceScenario {
  dir: string;
  inbox: string;
  configPath: string;
  datasetId: string;
  env: NodeJS.ProcessEnv;
  /** The `shop` dataset of this scenario, with overrides. */
  dataset(overrides?: Record<string, unknown>): Record<string, unknown>;
  /** Write connector.yaml with these datasets. */
  writeConfig(datasets: Record<string, unknown>, extra?: Record<string, unknown>): Promise<void>;
}

/** Set up a scenario on `emu`: dataset `datasetId`, its key in env DATASET_KEY. */
export async function serviceScenario(emu: RunningEmulator, datasetId: string): Promise<ServiceScenario> {
  const dir = await mkdtemp(join(tmpdir(), 'dc-svc-'));
  const inbox = join(dir, 'inbox');
  await mkdir(inbox);
  emu.emulator.addDataset({ id: datasetId });
  const key = emu.emulator.addKey({ dataset: datasetId });
  const configPath = join(dir, 'connector.yaml');
  return {
    dir,
    inbox,
    configPath,
    datasetId,
    env: { DATASET_KEY: key },
    dataset: (overrides = {}) => ({
      api: {
        base_url: emu.url,
        dataset_id: datasetId,
        key: { env: 'DATASET_KEY' },
        retry: { max_attempts: 2, base_delay_ms: 10, max_delay_ms: 20 },
      },
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
      watch: { path: inbox, include: ['*.csv'], settle_ms: 100, poll_interval_ms: 30 },
      ...overrides,
    }),
    async writeConfig(datasets, extra = {}) {
      const doc = { state_dir: join(dir, 'state'), timezone: 'UTC', ...extra, datasets };
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

/** GET /healthz of a running service. */
export async function healthz(port: number): Promise<Record<string, unknown>> {
  return (await fetch(`http://127.0.0.1:${port}/healthz`)).json() as Promise<Record<string, unknown>>;
}
