import { systemClock } from '../../src/clock.js';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { DatasetClient } from '../../src/api/client.js';
import { exitCodeFor } from '../../src/cli/exit-codes.js';
import { Secret } from '../../src/secret.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import { currentMachineId } from '../../src/snapshot/locks.js';
import { DatasetBusyError, SyncEngine } from '../../src/sync/engine.js';
import { SharedLocks } from '../../src/sync/process-lock.js';
import { ids, recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
let db2: StateDb | undefined;
afterEach(async () => {
  db2?.close();
  db2 = undefined;
  await s?.close();
});

/** A second engine on its own connection to the same state db, as a CLI command beside the daemon has. */
function secondProcess(sc: Scenario, waitMs: number): SyncEngine {
  db2 = openStateDb(join(sc.dir, 'state.db'));
  const clock = { ...systemClock, now: () => sc.em.emulator.clock.now(), sleep: async (ms: number) => sc.em.emulator.clock.advance(Math.max(0, ms)) };
  return new SyncEngine({
    db: db2,
    logger: pino({ level: 'silent' }),
    clock,
    lock: { label: 'a dataset-connector sync', waitMs, pollMs: 10 },
    clientFor: (d) =>
      new DatasetClient({ baseUrl: d.api.base_url, datasetId: d.api.dataset_id, key: new Secret(sc.key), ratePerMinute: 120, clock, retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 } }),
  });
}

/** Resolves once the emulator has seen a POST /records (the first engine is mid-plan). */
function firstPost(sc: Scenario): Promise<void> {
  return new Promise((resolve) => {
    const t = setInterval(() => {
      if (sc.em.emulator.requests.some((r) => r.method === 'POST')) {
        clearInterval(t);
        resolve();
      }
    }, 5);
  });
}

describe('one process at a time works on a dataset (a lock in the state db)', () => {
  it('a second process meeting a sync in flight waits, then reports DATASET_BUSY naming the holder, sending nothing', async () => {
    s = await scenario({ records: recs(10) });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) });
    const other = secondProcess(s, 100);
    const file = await s.writeExport(recs(16));
    s.em.emulator.clearRequests();
    s.em.emulator.faults.add({ method: 'POST', path: /records$/, count: Infinity, delayMs: 60 });
    const a = s.engine.sync(s.ds, { file });
    await firstPost(s);
    const sent = s.em.emulator.requests.length;
    const b = await other.sync(s.ds, { file });
    expect(b).toMatchObject({ result: 'failed', code: 'DATASET_BUSY', requests: 0 });
    expect(b.message).toMatch(new RegExp(`^the daemon \\(pid ${process.pid}\\) is working on shop-1; try again$`));
    expect(s.em.emulator.requests.length - sent).toBeLessThanOrEqual(2); // only the first engine's own requests went on
    await expect(other.approve(s.ds)).rejects.toSatisfy((e) => e instanceof DatasetBusyError && exitCodeFor(e) === 75);
    expect((await a).result).toBe('published');
    expect(ids(s.published())).toEqual(ids(recs(16)));
    expect(s.em.emulator.counters).toMatchObject({ recordWrites: 6, publishes: 1, discards: 0 });
    // Released: the other process goes on now.
    expect((await other.sync(s.ds, { file })).result).toBe('unchanged');
  });

  it('a lease that ran out, or a holder on this machine whose process is gone, is taken over', async () => {
    s = await scenario({ records: recs(3) });
    const file = await s.writeExport(recs(3));
    const far = Date.now() + 3_600_000;
    s.db.conn
      .prepare('INSERT INTO locks (dataset, owner_id, pid, host, label, purpose, acquired_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run('shop-1', 'gone', process.pid, 'elsewhere', 'the daemon', 'sync', 0, Date.now() - 1);
    expect((await s.engine.sync(s.ds, { file })).result).toBe('unchanged');
    expect(s.db.locks.get('shop-1')).toBeNull();

    if (currentMachineId() === null) return; // no machine id here: only leases decide
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    s.db.conn
      .prepare('INSERT INTO locks (dataset, owner_id, pid, host, machine_id, label, purpose, acquired_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run('shop-1', 'dead', dead, (await import('node:os')).hostname(), currentMachineId(), 'the daemon', 'sync', 0, far);
    expect((await s.engine.sync(s.ds, { file })).result).toBe('unchanged');
  });

  it('engine.sync reports an unexpected failure with a code instead of throwing it', async () => {
    s = await scenario({ records: recs(3) });
    s.db.conn.exec('DROP TABLE plans'); // the state db breaks under it
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(recs(4)) });
    expect(sum).toMatchObject({ result: 'stopped', code: 'STATE_ERROR' });
  });
});

describe('a lock held for a process lifetime (SharedLocks.hold)', () => {
  it('keeps its lease fresh, says when another process took it over, and then gives back nothing of the other one', async () => {
    s = await scenario({ records: [] });
    const locks = new SharedLocks(s.db.locks, { label: 'the daemon', waitMs: 0, leaseMs: 30, pollMs: 5 }, pino({ level: 'silent' }));
    let onLost!: () => void;
    const lost = new Promise<void>((resolve) => (onLost = resolve));
    const release = await locks.hold('*daemon', 'serve', { onLost: () => onLost() });
    expect(s.db.locks.get('*daemon')).toMatchObject({ pid: process.pid, purpose: 'serve' });
    // Another process takes it over (this one was suspended past its lease).
    s.db.conn.prepare('UPDATE locks SET owner_id = ?, pid = ? WHERE dataset = ?').run('other', 1, '*daemon');
    await lost;
    release();
    expect(s.db.locks.get('*daemon')).toMatchObject({ ownerId: 'other', pid: 1 });
  });
});
