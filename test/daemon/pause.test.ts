import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { datasetConfigSchema, type DatasetConfig } from '../../src/config/schema.js';
import { normaliseDataset } from '../../src/config/normalise.js';
import { DatasetRuntime, HISTORY_PRUNE_TIMER_MS } from '../../src/daemon/dataset-runtime.js';
import { HealthState } from '../../src/daemon/health-state.js';
import { DaemonMetrics } from '../../src/daemon/metrics.js';
import type { DaemonEngine } from '../../src/daemon/ports.js';
import { daemonState } from '../../src/daemon/state.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import { emptySummary, type SyncSummary } from '../../src/sync/outcome.js';
import { capture, ManualClock, waitEvent } from './service-harness.js';

/** Issue 14: a paused dataset takes no export; the daemon notices pause and resume in the state db, without restart. */

const runtimes: DatasetRuntime[] = [];
const dbs: StateDb[] = [];
afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.stop()));
  for (const db of dbs.splice(0)) db.close();
});

class RecordingEngine implements DaemonEngine {
  readonly synced: string[] = [];
  /** What each resume of the journal answered: paused while the state db says so (as the engine does with a plan open). */
  readonly resumes: string[] = [];
  paused: () => boolean = () => false;
  /** Each history prune the runtime asked for. */
  prunes = 0;
  pruneHistory(): null {
    this.prunes++;
    return null;
  }
  async sync(ds: DatasetConfig, input: { file: string }): Promise<SyncSummary> {
    this.synced.push(input.file.split('/').pop()!);
    return { ...emptySummary(ds.name, input.file), result: 'published', requests: 1 };
  }
  async resume(ds: DatasetConfig): Promise<unknown> {
    const result = this.paused() ? 'paused' : 'unchanged';
    this.resumes.push(result);
    return { ...emptySummary(ds.name, null), result };
  }
}

async function setup() {
  const inbox = await mkdtemp(join(tmpdir(), 'dc-pause-'));
  const ds0 = datasetConfigSchema.parse(normaliseDataset({
    api: { base_url: 'http://127.0.0.1:1', key: { env: 'UNUSED' } },
    source: { type: 'csv' },
    mapping: { fields: { record_id: 'sku', display_name: 'name', api_value: 'sku' } },
    watch: { path: inbox, settle_ms: 80, poll_interval_ms: 30 },
  }));
  const ds = { ...ds0, name: 'shop', file: '/dev/null', api: { ...ds0.api, dataset_id: 'shop' } } as DatasetConfig;
  // The CLI's pause and resume write this state db; the daemon holds its own connection to it.
  const path = join(await mkdtemp(join(tmpdir(), 'dc-pause-state-')), 'state.db');
  const db = openStateDb(path);
  const cli = openStateDb(path);
  dbs.push(db, cli);
  const log = capture();
  const timers = new ManualClock();
  const engine = new RecordingEngine();
  engine.paused = () => cli.snapshot('shop').paused() !== null;
  const health = new HealthState();
  health.setPhase('running');
  const r = new DatasetRuntime(ds, {
    engine,
    state: daemonState(db),
    logger: log.logger,
    metrics: new DaemonMetrics(),
    health,
    timezone: 'UTC',
    tmpDir: join(tmpdir(), 'dc-pause-tmp'),
    clock: timers,
  });
  runtimes.push(r);
  return { inbox, ds, r, log, timers, engine, cli };
}

describe('pause and resume in the daemon', () => {
  it('an export for a paused dataset waits in the folder; resume from another connection has it synced', async () => {
    const { inbox, r, log, timers, engine, cli } = await setup();
    cli.snapshot('shop').pause({ at: Date.now(), by: 'test' });
    await r.start();
    await writeFile(join(inbox, 'a.csv'), 'sku,name\n1,a\n');
    await waitEvent(log.lines, 'file.skipped', { reason: 'paused' });
    expect(engine.synced).toEqual([]);
    expect(await readdir(inbox)).toContain('a.csv');
    // Still paused when the poll comes: nothing runs, the poll waits again.
    expect(timers.fire('pause')).toBe(1);
    expect(engine.synced).toEqual([]);
    expect(timers.labels()).toContain('pause');

    cli.snapshot('shop').unpause();
    timers.fire('pause');
    await waitEvent(log.lines, 'dataset.resumed', { waiting: 1 });
    await r.idle();
    expect(engine.synced).toEqual(['a.csv']);
    expect(await readdir(inbox)).not.toContain('a.csv');
  });

  it('a pause made while the daemon runs holds the next export', async () => {
    const { inbox, r, log, engine, cli } = await setup();
    await r.start();
    await writeFile(join(inbox, 'a.csv'), 'sku,name\n1,a\n');
    await waitEvent(log.lines, 'file.processed');
    expect(engine.synced).toEqual(['a.csv']);
    cli.snapshot('shop').pause({ at: Date.now(), by: 'test' });
    await writeFile(join(inbox, 'b.csv'), 'sku,name\n2,b\n');
    await waitEvent(log.lines, 'file.skipped', { reason: 'paused', file: join(inbox, 'b.csv') });
    expect(engine.synced).toEqual(['a.csv']);
  });

  it('an interrupted plan left open at start because the dataset is paused is resumed when the dataset is', async () => {
    const { r, log, timers, engine, cli } = await setup();
    cli.snapshot('shop').pause({ at: Date.now(), by: 'test' });
    await r.start();
    await r.idle();
    expect(engine.resumes).toEqual(['paused']);
    cli.snapshot('shop').unpause();
    timers.fire('pause');
    await waitEvent(log.lines, 'dataset.resumed', { waiting: 0, journal: true });
    await r.idle();
    expect(engine.resumes).toEqual(['paused', 'unchanged']);
  });

  it('a paused (or idle) daemon prunes the history at start and on its daily timer, never by sleeping', async () => {
    const { r, timers, engine, cli } = await setup();
    cli.snapshot('shop').pause({ at: Date.now(), by: 'test' });
    await r.start();
    expect(engine.prunes).toBe(1);
    expect(timers.pending.find((t) => t.label === 'history-prune')?.ms).toBe(HISTORY_PRUNE_TIMER_MS);
    expect(timers.fire('history-prune')).toBe(1);
    expect(engine.prunes).toBe(2);
    expect(timers.labels()).toContain('history-prune'); // armed again
    await r.stop();
    expect(timers.labels()).not.toContain('history-prune');
  });
});
