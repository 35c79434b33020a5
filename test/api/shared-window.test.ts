import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { keyHash, WINDOW_MS } from '../../src/api/rate-limiter.js';
import { maxInWindow } from '../../src/emulator/index.js';
import { Secret } from '../../src/secret.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import { tempDir } from '../sync/diff-fixtures.js';
import { IdleClock, KEYS, recs, startWorld, type World } from './harness.js';

/**
 * Clients of one key in two processes share the key's budget through the
 * state database (A24: the server counts every request of a key, whoever sent
 * it). Each "process" here is its own connection to the state db with its own
 * in-process limiter, as a daemon and a cron `sync` are; the emulator's
 * request log, on the clients' manual clock, is the judge.
 */

let w: World;
let t: ReturnType<typeof tempDir>;
const dbs: StateDb[] = [];
afterEach(async () => {
  await w.close();
  for (const db of dbs.splice(0)) db.close();
  t.cleanup();
});

function stateDb(file = 'state.db'): StateDb {
  const db = openStateDb(join(t.dir, file));
  dbs.push(db);
  return db;
}

/** `calls` reads spread over one client per state db connection, all started at once. */
async function burst(windows: StateDb[], calls: number, rate = 100) {
  const clock = new IdleClock(w);
  for (const db of windows) clock.clients.push(w.client(KEYS.full, { clock, ratePerMinute: rate, rateWindow: db.rateWindow }));
  const n = clock.clients.length;
  await Promise.all(Array.from({ length: calls }, (_, i) => clock.clients[i % n]!.getRecord(`A-${String((i % 5) + 1).padStart(5, '0')}`)));
  return clock.clients;
}

describe('one rate window per key across processes (state db)', () => {
  it('two processes on one state db send 400 requests: never more than 100 in any rolling minute, no 429', async () => {
    w = await startWorld({ records: recs(5) });
    t = tempDir();
    await burst([stateDb(), stateDb()], 400);
    const log = w.emulator.requests;
    expect(log).toHaveLength(400);
    expect(log.filter((r) => r.status === 429)).toEqual([]);
    expect(maxInWindow(log)).toBeLessThanOrEqual(100);
    expect(maxInWindow(log)).toBe(100); // the budget is used, not halved
  });

  it('control: the same two processes with a window each (two state dbs) overshoot and meet 429s', async () => {
    w = await startWorld({ records: recs(5) });
    t = tempDir();
    await burst([stateDb('a.db'), stateDb('b.db')], 400);
    expect(maxInWindow(w.emulator.requests)).toBeGreaterThan(120);
    expect(w.emulator.requests.some((r) => r.status === 429)).toBe(true);
  });

  it('a request the client repeats takes a slot for each attempt', async () => {
    w = await startWorld({ records: recs(5) });
    t = tempDir();
    const db = stateDb();
    w.emulator.faults.add({ method: 'GET', path: /\/records\/A-00001$/, status: 503, count: 2 });
    const c = w.client(KEYS.full, { rateWindow: db.rateWindow, retry: { baseDelayMs: 1, maxDelayMs: 1 } });
    await c.getRecord('A-00001');
    expect(w.emulator.requests).toHaveLength(3);
    expect(db.rateWindow.count(keyHash(new Secret(KEYS.full)), WINDOW_MS, w.clock.now())).toBe(3);
  });

  it('a process with a lower rate keeps to it over the slots the other took', async () => {
    w = await startWorld({ records: recs(5) });
    t = tempDir();
    const [a, b] = [stateDb(), stateDb()];
    const clock = new IdleClock(w);
    const fast = w.client(KEYS.full, { clock, ratePerMinute: 100, rateWindow: a.rateWindow });
    const slow = w.client(KEYS.full, { clock, ratePerMinute: 30, rateWindow: b.rateWindow });
    clock.clients.push(fast, slow);
    for (let i = 0; i < 25; i++) await fast.getRecord('A-00001');
    const started = w.clock.now();
    // 25 of the slow process's 30 are taken already: its sixth request waits for the first of fast's to leave.
    for (let i = 0; i < 6; i++) await slow.getRecord('A-00002');
    expect(w.clock.now() - started).toBeGreaterThan(0);
    expect(slow.stats.limiterWaitMs).toBeGreaterThan(0);
    expect(maxInWindow(w.emulator.requests)).toBeLessThanOrEqual(30);
  });
});
