import { afterEach, describe, expect, it } from 'vitest';
import { maxInWindow } from '../../src/emulator/index.js';
import { IdleClock, KEYS, recs, startWorld, type World } from './harness.js';

let w: World;
afterEach(async () => {
  await w.close();
});

async function burst(rate: number, calls: number, clientCount: number) {
  const clock = new IdleClock(w);
  for (let i = 0; i < clientCount; i++) clock.clients.push(w.client(KEYS.full, { clock, ratePerMinute: rate }));
  const started = w.clock.now();
  const results = await Promise.all(
    Array.from({ length: calls }, (_, i) => clock.clients[i % clientCount]!.getRecord(`A-${String((i % 5) + 1).padStart(5, '0')}`)),
  );
  return { results, clients: clock.clients, elapsedMs: w.clock.now() - started };
}

describe('client-side pacing per key (A24)', () => {
  it('a burst of 500 calls through one key, shared by two clients, never exceeds 100 in any rolling minute', async () => {
    w = await startWorld({ records: recs(5) });
    const { results, clients, elapsedMs } = await burst(100, 500, 2);
    expect(results).toHaveLength(500);
    const log = w.emulator.requests;
    expect(log).toHaveLength(500);
    expect(log.every((r) => r.status === 200)).toBe(true); // no 429: the server's 120 was never reached
    expect(maxInWindow(log)).toBeLessThanOrEqual(100);
    expect(maxInWindow(log)).toBe(100); // and the budget was used, not wasted
    expect(elapsedMs).toBeGreaterThanOrEqual(4 * 60_000);
    expect(clients.reduce((n, c) => n + c.stats.limiterWaitMs, 0)).toBeGreaterThan(0);
  });

  it('honours a configured lower rate', async () => {
    w = await startWorld({ records: recs(5) });
    await burst(30, 100, 1);
    expect(maxInWindow(w.emulator.requests)).toBeLessThanOrEqual(30);
  });

  it('control: without the client limit the same measure sees the server refuse requests', async () => {
    w = await startWorld({ records: recs(5) });
    const { results } = await burst(10_000, 200, 1);
    expect(results).toHaveLength(200); // every call still succeeds, through Retry-After
    expect(maxInWindow(w.emulator.requests)).toBeGreaterThan(120);
    expect(w.emulator.requests.some((r) => r.status === 429)).toBe(true);
  });
});
