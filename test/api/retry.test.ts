import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DEFAULT_RETRY_POLICY, decideRetry, fullJitterDelay, parseRetryAfter, type RetryPolicy } from '../../src/api/retry.js';

const policy = (over: Partial<RetryPolicy> = {}): RetryPolicy => ({ ...DEFAULT_RETRY_POLICY, random: () => 0.5, ...over });

describe('fullJitterDelay', () => {
  it('stays within [0, min(cap, base·2^(n-1))]', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 40 }), fc.double({ min: 0, max: 0.999999, noNaN: true }), (n, r) => {
        const d = fullJitterDelay(n, 100, 20_000, () => r);
        expect(d).toBeGreaterThanOrEqual(0);
        expect(d).toBeLessThanOrEqual(Math.min(20_000, 100 * 2 ** (n - 1)));
      }),
    );
  });
});

describe('parseRetryAfter (A4)', () => {
  it('reads delta-seconds, HTTP dates, and nothing', () => {
    expect(parseRetryAfter('7', 0)).toBe(7000);
    expect(parseRetryAfter('1.5', 0)).toBe(1500);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6000);
    expect(parseRetryAfter(null, 0)).toBeNull();
    expect(parseRetryAfter('soon', 0)).toBeNull();
  });
});

describe('decideRetry', () => {
  it('never repeats a final answer', () => {
    expect(decideRetry(policy(), 'final', 1, true, null)).toEqual({ retry: false, reason: 'final' });
  });

  it('repeats transient failures only when the request is safe', () => {
    expect(decideRetry(policy(), 'transient', 1, true, null).retry).toBe(true);
    expect(decideRetry(policy(), 'transient', 1, false, null)).toEqual({ retry: false, reason: 'unsafe' });
  });

  it('repeats a request that never left the host even when unsafe', () => {
    expect(decideRetry(policy(), 'not-sent', 1, false, null).retry).toBe(true);
  });

  it('stops after maxAttempts for transient and maxThrottleAttempts for 429', () => {
    const p = policy({ maxAttempts: 3, maxThrottleAttempts: 5 });
    expect(decideRetry(p, 'transient', 2, true, null).retry).toBe(true);
    expect(decideRetry(p, 'transient', 3, true, null)).toEqual({ retry: false, reason: 'exhausted' });
    expect(decideRetry(p, 'throttled', 4, false, null).retry).toBe(true);
    expect(decideRetry(p, 'throttled', 5, false, null)).toEqual({ retry: false, reason: 'exhausted' });
  });

  it('waits Retry-After plus jitter, and gives up on a wait longer than allowed', () => {
    const p = policy({ retryAfterJitterMs: 1000, maxRetryAfterMs: 65_000 });
    expect(decideRetry(p, 'throttled', 1, false, 3000)).toEqual({ retry: true, delayMs: 3500 });
    expect(decideRetry(p, 'throttled', 1, false, 120_000)).toEqual({ retry: false, reason: 'retry-after-too-long' });
  });

  it('uses the throttle base when a 429 has no Retry-After', () => {
    const p = policy({ throttleBaseDelayMs: 500, random: () => 0.999 });
    const d = decideRetry(p, 'throttled', 3, false, null);
    expect(d.retry && d.delayMs).toBe(Math.floor(0.999 * 2000));
  });
});
