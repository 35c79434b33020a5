import { systemClock } from '../../src/clock.js';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { DatasetClient } from '../../src/api/client.js';
import type { DatasetConfig } from '../../src/config/schema.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { EmulatorClock } from '../../src/emulator/clock.js';
import { mappingConfigSchema } from '../../src/mapping/config.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { Secret } from '../../src/secret.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import { sourceConfigSchema } from '../../src/sources/config.js';
import { SyncEngine } from '../../src/sync/engine.js';
import { policySchema } from '../../src/config/policy.js';
import type { SyncSummary } from '../../src/sync/outcome.js';

/** One scenario: an emulator over real HTTP, a dataset and key, a state db in a temp dir, an engine. */
export interface Scenario {
  em: RunningEmulator;
  dir: string;
  db: StateDb;
  engine: SyncEngine;
  ds: DatasetConfig;
  key: string;
  logs: Array<Record<string, unknown>>;
  /** Write an export CSV of these records; returns its path. */
  writeExport(records: Array<Pick<DatasetRecord, 'record_id' | 'display_name' | 'api_value'>>, name?: string): Promise<string>;
  published(): DatasetRecord[];
  /** Make the clients of later engine calls send this key (a key replaced in its file). */
  useKey(key: string): void;
  /** A new process on the same state dir (after a kill): the state db opened again, a new engine. */
  restart(): void;
  close(): Promise<void>;
}

/** Build a record. */
export function rec(id: string, name = `Item ${id}`, code = `code-${id}`): DatasetRecord {
  return { record_id: id, display_name: name, api_value: code, aliases: [], attributes: {}, active: true };
}

/** Records r-001 … r-n. */
/** An export of `records` in the SKU,Name,Code layout the scenario mappings read, written to dir/name. */
export async function writeSkuExport(dir: string, name: string, records: DatasetRecord[]): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, ['SKU,Name,Code', ...records.map((r) => `${r.record_id},${r.display_name},${r.api_value}`)].join('\n') + '\n');
  return file;
}

export function recs(n: number, from = 1): DatasetRecord[] {
  return Array.from({ length: n }, (_, i) => rec(`r-${String(from + i).padStart(3, '0')}`));
}

/** Start a scenario. */
export async function scenario(opts: {
  records?: DatasetRecord[];
  roles?: Array<'read' | 'write' | 'replace' | 'publish'>;
  legacy?: boolean;
  policy?: Record<string, unknown>;
  /** Mapping config (default: record_id SKU, display_name Name, api_value Code). */
  mapping?: Record<string, unknown>;
  jobDurationMs?: number;
  /** The emulator's (and the engine's) clock stands still until something waits on it (EmulatorClock manual). */
  manualClock?: boolean;
  /** The key the connector's client sends, when not the dataset key the scenario issues (e.g. an account key). */
  clientKey?: string;
  /** Called after each client request (e.g. to publish in the portal in the middle of a sync). */
  onRequest?: (e: { method: string; path: string; status: number | null }) => void;
  /** After a 401: the key now at the key's source (DatasetClientOptions.rereadKey), or undefined. */
  rereadKey?: () => string | undefined;
} = {}): Promise<Scenario> {
  const em = await startEmulator(opts.manualClock ? { clock: new EmulatorClock({ mode: 'manual' }) } : {});
  em.emulator.addDataset({ id: 'shop-1', ...(opts.records ? { records: opts.records } : {}) });
  em.emulator.configure({ jobDurationMs: opts.jobDurationMs ?? 0 });
  const key = em.emulator.addKey({ dataset: 'shop-1', roles: opts.roles ?? ['read', 'write', 'replace', 'publish'], legacy: opts.legacy ?? false });
  const dir = await mkdtemp(join(tmpdir(), 'dc-sync-'));
  const logs: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) });
  const ds = datasetConfig(em.url, key, opts.policy ?? {}, opts.mapping);
  const clients: DatasetClient[] = [];
  let clientKey = opts.clientKey ?? key;
  const reread = opts.rereadKey;
  // Waits (retry back-off, Retry-After, job polls) move the emulator's clock instead of sleeping; the state db's stamps follow it too.
  const clock = { ...systemClock, now: () => em.emulator.clock.now(), sleep: async (ms: number) => em.emulator.clock.advance(Math.max(0, ms)) };
  const start = (db: StateDb) => new SyncEngine({
    db,
    logger,
    clock,
    clientFor: (d) => {
      const c = new DatasetClient({
        baseUrl: d.api.base_url,
        datasetId: d.api.dataset_id,
        key: new Secret(clientKey),
        ...(reread
          ? {
              rereadKey: async (current: Secret) => {
                const next = reread();
                return next === undefined || next === current.reveal() ? undefined : { secret: new Secret(next) };
              },
            }
          : {}),
        ratePerMinute: 120,
        clock,
        ...(opts.onRequest ? { onRequest: opts.onRequest as never } : {}),
        retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 },
      });
      clients.push(c);
      return c;
    },
  });
  const db = openStateDb(join(dir, 'state.db'), { clock });
  let n = 0;
  const sc: Scenario = {
    em,
    dir,
    db,
    engine: start(db),
    ds,
    key,
    logs,
    async writeExport(records, name) {
      const file = join(dir, name ?? `export-${++n}.csv`);
      const lines = ['SKU,Name,Code', ...records.map((r) => `${r.record_id},${r.display_name},${r.api_value}`)];
      await writeFile(file, lines.join('\n') + '\n');
      return file;
    },
    published: () => em.emulator.records('shop-1'),
    useKey(k) {
      clientKey = k;
    },
    restart() {
      sc.db.close();
      sc.db = openStateDb(join(dir, 'state.db'), { clock });
      sc.engine = start(sc.db);
    },
    async close() {
      await Promise.all(clients.map((c) => c.close()));
      sc.db.close();
      await em.close();
    },
  };
  return sc;
}

/** A dataset config as loadConfig would give it. */
export function datasetConfig(baseUrl: string, _key: string, policy: Record<string, unknown>, mapping?: Record<string, unknown>): DatasetConfig {
  return {
    name: 'shop-1',
    file: 'test.yaml',
    api: {
      base_url: baseUrl,
      dataset_id: 'shop-1',
      key: { env: 'UNUSED' },
      rate_per_minute: 120,
      connect_timeout_ms: 5_000,
      request_timeout_ms: 10_000,
      retry: { max_attempts: 3, base_delay_ms: 1, max_delay_ms: 5 },
    },
    ...oneFeed(sourceConfigSchema.parse({ type: 'csv' }), mappingConfigSchema.parse(mapping ?? { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'Code' } })),
    policy: policySchema.parse(policy),
  } as unknown as DatasetConfig;
}

/** The feed options of a dataset written in the single-source form: one full feed main, also seen as the dataset's own. */
function oneFeed(source: unknown, mapping: unknown) {
  return { feeds: { main: { role: 'full', source, mapping, schedules: [] } }, precedence: {}, feed: 'main', source, mapping, schedules: [] };
}

/** Records without defaults noise, sorted, for comparing. */
export function ids(records: DatasetRecord[]): string[] {
  return records.map((r) => r.record_id).sort();
}

/**
 * A per-record sync stopped between journaled steps (as by a shutdown): the
 * scenario's first sync adopts r-001…r-010, then an export of r-001…r-014 is
 * stopped after its second POST, leaving its plan open in the journal.
 */
export async function interruptedSync(): Promise<{ s: Scenario; file: string; summary: SyncSummary; posts: () => number }> {
  const stop = new AbortController();
  let on = false;
  let posts = 0;
  const s = await scenario({ records: recs(10), onRequest: (e) => on && e.method === 'POST' && e.path.endsWith('/records') && ++posts === 2 && stop.abort() });
  await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) });
  on = true;
  const file = await s.writeExport(recs(14));
  const summary = await s.engine.sync(s.ds, { file }, { signal: stop.signal });
  return { s, file, summary, posts: () => posts };
}
