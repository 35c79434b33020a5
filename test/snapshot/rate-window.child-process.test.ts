import { systemClock } from '../../src/clock.js';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { keyHash, RateLimiter, WINDOW_MS } from '../../src/api/rate-limiter.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import { Secret } from '../../src/secret.js';
import { tempDir } from '../sync/diff-fixtures.js';

/** The per-key request window in the state db (A24), as two processes see it: two connections to one file, time given by the test. */

const KEY = 'tbd_live_rate_window_key_0123456789';
const OTHER = 'tbd_live_rate_window_other_98765432';
const T0 = Date.UTC(2025, 0, 6, 9);

let t: ReturnType<typeof tempDir>;
let a: StateDb;
let b: StateDb;
beforeEach(() => {
  t = tempDir();
  a = openStateDb(join(t.dir, 'state.db'));
  b = openStateDb(join(t.dir, 'state.db'));
});
afterEach(() => {
  a.close();
  b.close();
  t.cleanup();
});

/** 0 when a slot was taken, else the ms to wait. */
function take(db: StateDb, now: number, limit = 5, key = KEY): number {
  const r = db.rateWindow.take({ keyId: keyHash(new Secret(key)), limit, windowMs: WINDOW_MS, now });
  return 'slot' in r ? 0 : r.waitMs;
}

describe('the shared rate window', () => {
  it('counts the slots of both connections together, and says when the oldest leaves', () => {
    expect([take(a, T0), take(b, T0 + 1_000), take(a, T0 + 2_000), take(b, T0 + 3_000), take(a, T0 + 4_000)]).toEqual([0, 0, 0, 0, 0]);
    // Full for both: the first slot (T0) leaves at T0 + 60 s.
    expect(take(b, T0 + 10_000)).toBe(50_000);
    expect(take(a, T0 + 10_000)).toBe(50_000);
    // A refused take took nothing: still 5, not 7.
    expect(a.rateWindow.count(keyHash(new Secret(KEY)), WINDOW_MS, T0 + 10_000)).toBe(5);
    // At T0 + 60 s the first one is out of the window (half-open, as the server counts, A24).
    expect(take(b, T0 + WINDOW_MS)).toBe(0);
    expect(take(a, T0 + WINDOW_MS)).toBe(1_000); // the next leaves at T0 + 61 s
  });

  it('keeps each key apart, and a lower limit of one process is met over the slots of all', () => {
    for (let i = 0; i < 5; i++) expect(take(a, T0 + i)).toBe(0);
    expect(take(b, T0 + 10, 5, OTHER)).toBe(0);
    // A process configured at 3 per minute sees 5 taken: it waits until 3 have left (the third oldest, T0 + 2).
    expect(take(b, T0 + 10, 3)).toBe(WINDOW_MS + 2 - 10);
    // One configured at 6 still has one.
    expect(take(b, T0 + 10, 6)).toBe(0);
  });

  it('stores a fingerprint of the key, never the key, and forgets slots that left the window', () => {
    for (let i = 0; i < 5; i++) take(a, T0 + i);
    take(a, T0 + 5, 5, OTHER);
    take(b, T0 + WINDOW_MS + 3); // T0 + 0…3 have left the window; T0 + 4 and OTHER's T0 + 5 have not
    const rows = a.conn.prepare('SELECT key_fp, at FROM rate_slots ORDER BY at').all() as Array<{ key_fp: string; at: number }>;
    expect(rows).toEqual([
      { key_fp: keyHash(new Secret(KEY)), at: T0 + 4 },
      { key_fp: keyHash(new Secret(OTHER)), at: T0 + 5 },
      { key_fp: keyHash(new Secret(KEY)), at: T0 + WINDOW_MS + 3 },
    ]);
    a.conn.pragma('wal_checkpoint(TRUNCATE)');
    for (const file of ['state.db', 'state.db-wal']) {
      const bytes = readFileSync(join(t.dir, file)).toString('latin1');
      expect(bytes).not.toContain('rate_window_key');
      expect(bytes).not.toContain('rate_window_other');
    }
  });

  it('a slot counts from the answer of its request, even one answered after the window', () => {
    const keyId = keyHash(new Secret(KEY));
    const slots = [0, 1, 2].map((i) => a.rateWindow.take({ keyId, limit: 3, windowMs: WINDOW_MS, now: T0 + i }));
    const [first, , third] = slots.map((r) => ('slot' in r ? r.slot : -1));
    // The first request was answered 4 s after it was sent: its slot leaves at T0 + 64 s, not T0 + 60 s.
    a.rateWindow.answered({ keyId, slot: first!, at: T0 + 4_000 });
    expect(take(b, T0 + 10_000, 3)).toBe(WINDOW_MS + 1 - 10_000); // the second (T0 + 1) is now the oldest
    expect(take(b, T0 + WINDOW_MS + 1, 3)).toBe(0); // T0 + 1 left
    expect(take(b, T0 + WINDOW_MS + 2, 3)).toBe(0); // T0 + 2 left
    expect(take(b, T0 + WINDOW_MS + 3, 3)).toBe(4_000 - 3); // the answered first one leaves at T0 + 64 s
    // The third was answered 70 s late: its slot had left the window; it is taken again from the answer.
    a.rateWindow.answered({ keyId, slot: third!, at: T0 + 70_000 });
    expect(a.rateWindow.count(keyId, WINDOW_MS, T0 + 70_000)).toBe(3); // T0 + 60 001, T0 + 60 002 and the late answer
  });

  it('processes taking slots at the same moment never take more than the limit between them (IMMEDIATE transactions)', async () => {
    // Four real processes, each trying 40 times at one frozen instant: 160 tries for 60 slots.
    const db = fileURLToPath(new URL('../../dist/snapshot/db.js', import.meta.url));
    const script = `
      const { openStateDb } = await import(${JSON.stringify(db)});
      const s = openStateDb(process.argv[1]);
      let got = 0;
      // A take that meets another process's lock fails STATE_BUSY at once; the rate limiter asks again, as here.
      const take = () => { for (;;) { try { return s.rateWindow.take({ keyId: 'k', limit: 60, windowMs: 60000, now: ${T0} }); } catch (e) { if (e.code !== 'STATE_BUSY') throw e; } } };
      for (let i = 0; i < 40; i++) if ('slot' in take()) got++;
      s.close();
      process.stdout.write(String(got));`;
    const run = () =>
      new Promise<number>((resolve, reject) =>
        execFile(process.execPath, ['--input-type=module', '-e', script, join(t.dir, 'state.db')], (err, out) => (err ? reject(err) : resolve(Number(out)))),
      );
    const got = await Promise.all([run(), run(), run(), run()]);
    expect(got.reduce((a, b) => a + b, 0)).toBe(60);
    expect(a.rateWindow.count('k', WINDOW_MS, T0)).toBe(60);
  });

  it('a wall clock set back keeps the slots taken before it counted for at most a minute from now', () => {
    for (let i = 0; i < 5; i++) expect(take(a, T0 + i)).toBe(0);
    // The clock goes back an hour: the five slots still count (the server saw those requests)…
    const back = T0 - 3_600_000;
    expect(take(b, back)).toBe(WINDOW_MS);
    // …but no longer than a minute from the new now, not an hour and a minute.
    expect(take(b, back + WINDOW_MS)).toBe(0);
  });
});

describe('a state database held by another process', () => {
  it('a request waits for its slot while another connection holds the file, then takes it; past the limit it fails STATE_BUSY', async () => {
    // A clock whose sleeps the test releases: the limiter must wait asynchronously, not fail at the first busy answer.
    let now = T0;
    const sleeps: Array<() => void> = [];
    const clock = { ...systemClock, now: () => now, sleep: (ms: number) => new Promise<void>((r) => sleeps.push(() => ((now += ms), r()))) };
    const limiter = new RateLimiter(5, clock, { window: a.rateWindow, keyId: keyHash(new Secret(KEY)) });
    const hold = b.conn.prepare('BEGIN IMMEDIATE');
    hold.run();
    const admitted = limiter.acquire();
    await vi.waitFor(() => expect(sleeps.length).toBe(1)); // busy: waits, does not throw
    b.conn.prepare('COMMIT').run();
    sleeps.shift()!();
    await expect(admitted).resolves.toMatchObject({ waitedMs: expect.any(Number) });
    expect(a.rateWindow.count(keyHash(new Secret(KEY)), WINDOW_MS, now)).toBe(1);

    hold.run();
    let settled = false;
    const outcome = limiter.acquire().then(
      () => 'admitted',
      (err: { code?: string }) => err.code,
    );
    void outcome.finally(() => (settled = true));
    // Each released sleep moves the clock on; past two minutes of waiting the request gives up: retry later.
    while (!settled) {
      await vi.waitFor(() => expect(sleeps.length > 0 || settled).toBe(true));
      sleeps.shift()?.();
    }
    expect(await outcome).toBe('STATE_BUSY');
    expect(now - T0).toBeGreaterThanOrEqual(120_000);
    b.conn.prepare('ROLLBACK').run();
  });
});
