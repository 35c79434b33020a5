import { describe, expect, it } from 'vitest';
import { EmulatorClock } from '../../src/emulator/clock.js';
import { RateLimiter, WINDOW_MS, limiterFor } from '../../src/api/rate-limiter.js';
import { Secret } from '../../src/secret.js';

describe('RateLimiter', () => {
  it('admits at most `limit` in any rolling window, in arrival order', async () => {
    const clock = new EmulatorClock({ mode: 'manual', startMs: 0 });
    const limiter = new RateLimiter(10, clock);
    const admitted: { i: number; t: number }[] = [];
    await Promise.all(
      Array.from({ length: 35 }, (_, i) => limiter.acquire().then(() => admitted.push({ i, t: clock.now() }))),
    );
    expect(admitted.map((a) => a.i)).toEqual([...Array(35).keys()]);
    for (const a of admitted) {
      const inWindow = admitted.filter((b) => b.t > a.t - WINDOW_MS && b.t <= a.t).length;
      expect(inWindow).toBeLessThanOrEqual(10);
    }
  });

  it('rejects a waiter whose signal aborts, and serves the next one', async () => {
    const clock = new EmulatorClock({ mode: 'manual', startMs: 0 });
    const limiter = new RateLimiter(1, clock);
    await limiter.acquire();
    const ac = new AbortController();
    ac.abort();
    await expect(limiter.acquire(ac.signal)).rejects.toThrow();
    await expect(limiter.acquire()).resolves.toMatchObject({ waitedMs: expect.any(Number) });
  });

  it('counts a slot from the end of its request: the server counted it somewhere in between', async () => {
    const clock = new EmulatorClock({ mode: 'manual', startMs: 0 });
    const limiter = new RateLimiter(1, clock);
    const first = await limiter.acquire();
    clock.advance(5_000); // the request took 5 s
    first.done();
    const second = await limiter.acquire();
    expect(second.waitedMs).toBe(WINDOW_MS);
    expect(clock.now()).toBe(5_000 + WINDOW_MS);
  });

  it('is shared by every client of a key on a clock, at the strictest limit', () => {
    const clock = new EmulatorClock({ mode: 'manual', startMs: 0 });
    const a = limiterFor(new Secret('tbd_live_shared'), 100, clock);
    const b = limiterFor(new Secret('tbd_live_shared'), 50, clock);
    const c = limiterFor(new Secret('tbd_live_other'), 100, clock);
    expect(a).toBe(b);
    expect(a.limit).toBe(50);
    expect(c).not.toBe(a);
  });
});
