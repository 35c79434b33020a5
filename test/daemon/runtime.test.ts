import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { datasetConfigSchema, type DatasetConfig } from '../../src/config/schema.js';
import { normaliseDataset } from '../../src/config/normalise.js';
import { DatasetRuntime } from '../../src/daemon/dataset-runtime.js';
import { HealthState } from '../../src/daemon/health-state.js';
import { DaemonMetrics } from '../../src/daemon/metrics.js';
import type { DaemonEngine } from '../../src/daemon/ports.js';
import { daemonState } from '../../src/daemon/state.js';
import { silentLogger } from '../../src/log/logger.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import type { HeldDraft, RebuildReport } from '../../src/snapshot/types.js';
import { emptySummary, type SyncResult, type SyncSummary } from '../../src/sync/outcome.js';
import type { CronStarter } from '../../src/triggers/scheduler.js';
import { capture, drop, events, ManualClock } from './service-harness.js';

const runtimes: DatasetRuntime[] = [];
const dbs: StateDb[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.stop()));
  for (const db of dbs.splice(0)) db.close();
});

/** A real state db in a temp folder, closed after the test. */
async function stateDb(): Promise<StateDb> {
  const db = openStateDb(join(await mkdtemp(join(tmpdir(), 'dc-runtime-state-')), 'state.db'));
  dbs.push(db);
  return db;
}

function dataset(inbox: string, extra: Record<string, unknown> = {}): DatasetConfig {
  const parsed = datasetConfigSchema.parse(normaliseDataset({
    api: { base_url: 'http://127.0.0.1:1', key: { env: 'UNUSED' } },
    source: { type: 'csv' },
    mapping: { fields: { record_id: 'sku', display_name: 'name', api_value: 'sku' } },
    watch: { path: inbox, settle_ms: 80, poll_interval_ms: 30 },
    ...extra,
  }));
  return { ...parsed, name: 'shop', file: '/dev/null', api: { ...parsed.api, dataset_id: 'shop' } } as DatasetConfig;
}

/**
 * Stands in for the sync engine (another area, tested on its own): each sync
 * waits until the test releases it, so files can arrive while one runs.
 */
class GatedEngine implements DaemonEngine {
  readonly synced: string[] = [];
  /** Results of the next syncs, in order; then published. */
  readonly results: SyncResult[] = [];
  /** What reconcile reports, once the test releases it. */
  rebuilt: RebuildReport | null = null;
  #reconcileGate: (() => void) | undefined;
  #reconcileStarted: Array<() => void> = [];
  #gates: Array<() => void> = [];
  #started: Array<() => void> = [];
  async sync(ds: DatasetConfig, input: { file: string }): Promise<SyncSummary> {
    this.synced.push(input.file.split('/').pop()!);
    this.#started.splice(0).forEach((r) => r());
    await new Promise<void>((r) => this.#gates.push(r));
    return { ...emptySummary(ds.name, input.file), result: this.results.shift() ?? 'published', requests: 1 };
  }
  async resume(): Promise<unknown> {
    return undefined;
  }
  async reconcile(): Promise<{ rebuilt: RebuildReport | null }> {
    this.#reconcileStarted.splice(0).forEach((r) => r());
    await new Promise<void>((r) => (this.#reconcileGate = r));
    return { rebuilt: this.rebuilt };
  }
  reconcileStarted(): Promise<void> {
    return new Promise((r) => this.#reconcileStarted.push(r));
  }
  releaseReconcile(): void {
    this.#reconcileGate?.();
  }
  nextSync(): Promise<void> {
    return new Promise((r) => this.#started.push(r));
  }
  release(): void {
    this.#gates.shift()?.();
  }
}

async function runtime(
  ds: DatasetConfig,
  engine: DaemonEngine,
  opts: { held?: HeldDraft | null; cron?: CronStarter; now?: () => number; db?: StateDb; logger?: Logger; timers?: ManualClock } = {},
) {
  const db = opts.db ?? (await stateDb());
  if (opts.held) db.snapshot(ds.name).hold(opts.held);
  const health = new HealthState();
  health.setPhase('running');
  const r = new DatasetRuntime(ds, {
    engine,
    state: daemonState(db),
    logger: opts.logger ?? silentLogger(),
    metrics: new DaemonMetrics(),
    health,
    timezone: 'UTC',
    // The timers the test fires (else none run), at the time it says.
    clock: opts.timers ?? new ManualClock(opts.now),
    tmpDir: join(tmpdir(), 'dc-runtime-tmp'),
    ...(opts.cron ? { cronStarter: opts.cron } : {}),
  });
  runtimes.push(r);
  return { r, health, db };
}

async function until(cond: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (const deadline = Date.now() + 10_000; !(await cond()); ) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A runtime on a fresh inbox, with a captured log and timers the test fires,
 * whose first sync (of a.csv) has started and is held in `engine` until released.
 */
async function firstSyncHeld(engine: GatedEngine) {
  const inbox = await mkdtemp(join(tmpdir(), 'dc-runtime-'));
  const log = capture();
  const timers = new ManualClock();
  const ds = dataset(inbox);
  const { r } = await runtime(ds, engine, { logger: log.logger, timers });
  await r.start();
  const first = engine.nextSync();
  await writeFile(join(inbox, 'a.csv'), 'sku,name\n1,a\n');
  await first;
  return { inbox, ds, r, log, timers };
}

describe('dataset runtime', () => {
  it('coalesces exports arriving during a sync: the next sync reads the newest, the others are archived', async () => {
    const inbox = await mkdtemp(join(tmpdir(), 'dc-runtime-'));
    const engine = new GatedEngine();
    const { r } = await runtime(dataset(inbox), engine);
    await r.start();
    const first = engine.nextSync();
    await writeFile(join(inbox, 'a.csv'), 'sku,name\n1,a\n');
    await first;
    for (const [i, name] of ['b.csv', 'c.csv', 'd.csv'].entries()) {
      await writeFile(join(inbox, name), `sku,name\n${i},x\n`);
      const t = new Date(Date.now() + (i + 1) * 1000);
      await utimes(join(inbox, name), t, t);
    }
    await until(async () => (await readdir(join(inbox, 'processed')).catch(() => [])).length >= 2, 'b and c archived');
    const second = engine.nextSync();
    engine.release();
    await second;
    engine.release();
    await r.idle();
    expect(engine.synced).toEqual(['a.csv', 'd.csv']);
    const processed = (await readdir(join(inbox, 'processed'))).sort();
    expect(processed.filter((n) => n.includes('.superseded.')).map((n) => n[0])).toEqual(['b', 'c']);
    expect(processed.filter((n) => !n.includes('.superseded.')).map((n) => n[0])).toEqual(['a', 'd']);
    expect(await readdir(inbox)).toEqual(['processed']);
  });

  it('a draft_check schedule, fired by the injected tick source, warns before a held draft expires', async () => {
    const inbox = await mkdtemp(join(tmpdir(), 'dc-runtime-'));
    const fires: Array<() => void | Promise<void>> = [];
    const cron: CronStarter = (_e, _tz, fire) => {
      fires.push(fire);
      return { stop: () => undefined, nextRun: () => null };
    };
    const held: HeldDraft = { kind: 'staged', version: 4, reason: 'publish_required', planId: null, summary: null, since: 0 };
    const H = 3_600_000;
    let now = 10 * H;
    const { r, health } = await runtime(
      dataset(inbox, { schedules: [{ type: 'draft_check', cron: '0 * * * *', warn_before_ms: 4 * H }] }),
      new GatedEngine(),
      { held, cron, now: () => now },
    );
    await r.start();
    expect(fires).toHaveLength(1);
    await fires[0]!();
    expect(health.report().status).toBe('ok');
    now = 21 * H;
    await fires[0]!();
    expect(health.report()).toMatchObject({ status: 'degraded', reasons: [{ topic: 'draft', code: 'DRAFT_EXPIRING' }] });
    now = 25 * H;
    await fires[0]!();
    expect(health.report().reasons).toMatchObject([{ code: 'DRAFT_EXPIRED' }]);
  });

  it('drift found while an export waits: the waiting export goes, with the last hash forgotten, and nothing is re-queued', async () => {
    const inbox = await mkdtemp(join(tmpdir(), 'dc-runtime-'));
    const engine = new GatedEngine();
    engine.rebuilt = { records: 3, added: 0, removed: 1, changed: 0, foreignEdits: [], ownedRemoved: 1 };
    // The last export is still archived: without a waiting export it would be re-queued.
    const lastExport = 'sku,name\n1,old\n';
    await mkdir(join(inbox, 'processed'));
    await writeFile(join(inbox, 'processed', 'stock.20240101-000000.csv'), lastExport);
    const hash = createHash('sha256').update(lastExport).digest('hex');
    const db = await stateDb();
    db.snapshot('shop').recordSource({ fileHash: hash, rowCount: 1, at: 0 });
    const log = capture();
    const { r } = await runtime(dataset(inbox), engine, { logger: log.logger, db });
    await r.start();
    await r.idle();
    const started = engine.reconcileStarted();
    r.push({ kind: 'reconcile' });
    await started;
    await writeFile(join(inbox, 'w.csv'), 'sku,name\n1,a\n');
    await until(() => r.depth === 2, 'w.csv queued behind the reconcile');
    const synced = engine.nextSync();
    engine.releaseReconcile();
    await synced;
    engine.release();
    await r.idle();
    expect(db.snapshot('shop').info().lastSource).toMatchObject({ fileHash: null, rowCount: 1 });
    expect(events(log.lines, 'reconcile.reapply')).toEqual([
      expect.objectContaining({ action: 'marker_cleared', reason: 'export_waiting', deleted: 1, file_hash: hash }),
    ]);
    expect(engine.synced).toEqual(['w.csv']);
  });

  it('a reapply waiting in the queue gives way to any export that arrives, even one with an older mtime', async () => {
    const inbox = await mkdtemp(join(tmpdir(), 'dc-runtime-'));
    const engine = new GatedEngine();
    const log = capture();
    // The archived last export, copied across file systems: its mtime is now.
    const lastExport = 'sku,name\n1,old\n';
    await mkdir(join(inbox, 'processed'));
    const archived = join(inbox, 'processed', 'stock.20240101-000000.csv');
    await writeFile(archived, lastExport);
    const { r } = await runtime(dataset(inbox), engine, { logger: log.logger });
    await r.start();
    const first = engine.nextSync();
    await drop(inbox, 'a.csv', 'sku,name\n1,a\n', Date.now() - 120_000);
    await first;
    const reapply = { path: archived, name: 'stock.20240101-000000.csv', size: lastExport.length, mtimeMs: Date.now() };
    r.push({ kind: 'file', origin: 'reapply', file: reapply, reapplyOf: createHash('sha256').update(lastExport).digest('hex') });
    // An export written a minute ago (after a.csv), seen only now.
    await drop(inbox, 'b.csv', 'sku,name\n1,b\n', Date.now() - 60_000);
    // One of the two waiting exports is dropped: the reapply (skipped), or b.csv (archived as superseded).
    await until(() => events(log.lines, 'file.skipped').length + events(log.lines, 'file.archived').length > 0, 'one of the waiting exports dropped');
    expect(events(log.lines, 'file.archived')).toEqual([]);
    const second = engine.nextSync();
    engine.release();
    await second;
    engine.release();
    await r.idle();
    expect(engine.synced).toEqual(['a.csv', 'b.csv']);
    expect(events(log.lines, 'file.skipped')).toEqual([expect.objectContaining({ origin: 'reapply', reason: 'superseded', by: join(inbox, 'b.csv') })]);
    expect((await readdir(join(inbox, 'processed'))).filter((n) => n.includes('.superseded.'))).toEqual([]);
  });

  it('a reapply queued when the daemon stops (or crashes) before it runs is queued again at the next start', async () => {
    const inbox = await mkdtemp(join(tmpdir(), 'dc-runtime-'));
    const lastExport = 'sku,name\n1,old\n';
    await mkdir(join(inbox, 'processed'));
    const archivedName = 'stock.20240101-000000.csv';
    await writeFile(join(inbox, 'processed', archivedName), lastExport);
    const hash = createHash('sha256').update(lastExport).digest('hex');
    const db = await stateDb();
    db.snapshot('shop').recordSource({ fileHash: hash, rowCount: 1, at: 0 });
    /** Its journal resume waits for the test too, so the reapply can be left waiting behind it. */
    class GatedResume extends GatedEngine {
      resumeGate: (() => void) | undefined;
      override async resume(): Promise<unknown> {
        await new Promise<void>((r) => (this.resumeGate = r));
        return undefined;
      }
    }
    const engine = new GatedResume();
    engine.rebuilt = { records: 3, added: 0, removed: 1, changed: 0, foreignEdits: [], ownedRemoved: 1 };
    const first = await runtime(dataset(inbox), engine, { db });
    await first.r.start();
    engine.resumeGate!();
    await first.r.idle();
    const started = engine.reconcileStarted();
    first.r.push({ kind: 'reconcile' });
    await started;
    first.r.push({ kind: 'resume' });
    engine.releaseReconcile();
    await until(() => engine.resumeGate !== undefined && first.r.depth === 2, 'the reapply queued behind the resume');
    // Stopped now, the queued reapply is dropped with the queue; only the state db remembers it.
    const stopped = first.r.stop();
    engine.resumeGate!();
    await stopped;
    expect(engine.synced).toEqual([]);
    expect(db.snapshot('shop').reapply()).toMatchObject({ hash, status: 'pending' });

    const again = new GatedEngine();
    const log = capture();
    const second = await runtime(dataset(inbox), again, { db, logger: log.logger });
    await second.r.start();
    await until(() => again.synced.length > 0 || second.r.depth === 0, 'the reapply synced, or nothing left to run');
    expect(again.synced).toEqual([archivedName]);
    again.release();
    await second.r.idle();
    expect(events(log.lines, 'reconcile.reapply')).toEqual([
      expect.objectContaining({ action: 'requeued', reason: 'pending_at_start', file: join(inbox, 'processed', archivedName), file_hash: hash }),
    ]);
    expect(db.snapshot('shop').reapply()).toMatchObject({ hash, status: 'done' });
  });

  it('a reload that changes the key while the sync runs on the old one: when that sync stops, its retry goes at once', async () => {
    const engine = new GatedEngine();
    engine.results.push('stopped');
    const { inbox, ds, r, log, timers } = await firstSyncHeld(engine);
    await r.reconfigure(ds, 'key_changed');
    engine.release(); // the first sync ends stopped (say, a 401 on the old key)
    await until(() => engine.synced.length === 2, 'the retry of a.csv, at once (no retry timer is fired)');
    engine.release();
    await r.idle();
    expect(engine.synced).toEqual(['a.csv', 'a.csv']);
    expect(events(log.lines, 'sync.retry_now')).toEqual([expect.objectContaining({ file: join(inbox, 'a.csv'), reason: 'key_changed', slow: true })]);
    expect(events(log.lines, 'sync.retry_scheduled')).toEqual([]);
    expect(timers.labels()).not.toContain('retry');
    expect(await readdir(inbox)).toEqual(['processed']);
  });

  it('a reload during a sync that succeeds brings nothing forward, and the next stop waits for its slow retry', async () => {
    const engine = new GatedEngine();
    const { inbox, ds, r, log, timers } = await firstSyncHeld(engine);
    await r.reconfigure(ds, 'config_changed');
    engine.release();
    await r.idle();
    engine.results.push('stopped');
    const second = engine.nextSync();
    await writeFile(join(inbox, 'b.csv'), 'sku,name\n1,b\n');
    await second;
    engine.release();
    await until(() => timers.labels().includes('retry'), 'the slow retry of b.csv');
    expect(engine.synced).toEqual(['a.csv', 'b.csv']);
    expect(events(log.lines, 'sync.retry_now')).toEqual([]);
    expect(events(log.lines, 'sync.retry_scheduled')).toEqual([expect.objectContaining({ slow: true })]);
  });
});
