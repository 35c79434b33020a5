import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { ConnectorError } from '../errors.js';
import type { Secret } from '../secret.js';

/**
 * Client-side pacing per key. The server allows 120 requests per sliding
 * 60-second window per key, every request counted, rejected ones included
 * (A24); the client keeps under a lower configured rate (default 100) so that
 * it meets a 429 only when something else uses the same key.
 */

/** Length of the rolling window (A24). */
export const WINDOW_MS = 60_000;

/** A sliding-window limiter: at most `limit` admissions in any `WINDOW_MS`, FIFO among waiters. */
export class RateLimiter {
  #limit: number;
  readonly #clock: Clock;
  readonly #stamps: number[] = [];
  #tail: Promise<void> = Promise.resolve();

  constructor(limit: number, clock: Clock) {
    this.#limit = validLimit(limit);
    this.#clock = clock;
  }

  get limit(): number {
    return this.#limit;
  }

  /** Lower the limit (never raises it: every caller of a shared key gets the strictest setting). */
  tighten(limit: number): void {
    this.#limit = Math.min(this.#limit, validLimit(limit));
  }

  /** Admissions within the current window. */
  inWindow(): number {
    this.#prune(this.#clock.now());
    return this.#stamps.length;
  }

  /** Milliseconds the next caller would wait now (0 when a slot is free). */
  waitMs(): number {
    const now = this.#clock.now();
    this.#prune(now);
    if (this.#stamps.length < this.#limit) return 0;
    return this.#stamps[this.#stamps.length - this.#limit]! + WINDOW_MS - now;
  }

  /** Wait for a slot and take it; resolves with the milliseconds waited (queue included). Rejects when `signal` aborts. */
  acquire(signal?: AbortSignal): Promise<number> {
    // Waiters are served one at a time, in order, so a burst can't overshoot.
    const started = this.#clock.now();
    const run = this.#tail.then(() => this.#take(started, signal));
    this.#tail = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  async #take(started: number, signal?: AbortSignal): Promise<number> {
    for (;;) {
      signal?.throwIfAborted();
      const wait = this.waitMs();
      if (wait <= 0) {
        this.#stamps.push(this.#clock.now());
        return this.#clock.now() - started;
      }
      await this.#clock.sleep(wait, signal);
    }
  }

  #prune(now: number): void {
    while (this.#stamps.length > 0 && this.#stamps[0]! <= now - WINDOW_MS) this.#stamps.shift();
  }
}

function validLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1) {
    throw new ConnectorError('INVALID_OPTION', `rate_per_minute must be a positive integer, got ${limit}`, {
      action: 'stop',
      context: { setting: 'rate_per_minute' },
    });
  }
  return limit;
}

// One limiter per (clock, key): all clients using a key in this process share
// its budget. Keyed by a hash so that the registry never holds the key itself;
// per clock so that tests with their own fake clocks don't share state.
const registry = new WeakMap<Clock, Map<string, RateLimiter>>();

/** A short, non-reversible identity of a key (for the registry and for logs). */
export function keyHash(key: Secret): string {
  return createHash('sha256').update(key.reveal()).digest('hex').slice(0, 16);
}

/** The limiter shared by every client of `key` on `clock`, tightened to `limit` if that is lower. */
export function limiterFor(key: Secret, limit: number, clock: Clock): RateLimiter {
  let byKey = registry.get(clock);
  if (!byKey) {
    byKey = new Map();
    registry.set(clock, byKey);
  }
  const id = keyHash(key);
  const existing = byKey.get(id);
  if (existing) {
    existing.tighten(limit);
    return existing;
  }
  const created = new RateLimiter(limit, clock);
  byKey.set(id, created);
  return created;
}
