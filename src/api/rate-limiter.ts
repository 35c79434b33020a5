import { createHash } from 'node:crypto';
import type { Clock } from '../clock.js';
import { ConnectorError } from '../errors.js';
import type { Secret } from '../secret.js';

/**
 * Client-side pacing per key. The server allows 120 requests per sliding
 * 60-second window per key, every request counted, rejected ones included
 * (A24); the client keeps under a lower configured rate (default 100). In one
 * process every client of a key shares one limiter; processes that share a
 * state database (the daemon, cron's `sync`, a person's `approve`) also share
 * one window in it, so that together they stay under the rate too.
 */

/** Length of the rolling window (A24). */
export const WINDOW_MS = 60_000;
/** How long a request waits for the state database held by another process before it fails STATE_BUSY (retry later). */
const SHARED_BUSY_MAX_MS = 120_000;
const SHARED_BUSY_RETRY_MS = 100;
const SHARED_BUSY_RETRY_MAX_MS = 2_000;

/**
 * A window of request slots shared with other processes (the state
 * database's, src/snapshot/rate-window.ts).
 */
export interface SharedRateWindow {
  /** Take a slot (its id), or take none and say how many ms until one may be free. */
  take(req: { keyId: string; limit: number; windowMs: number; now: number }): { slot: number } | { waitMs: number };
  /** The request of `slot` got its answer at `at`: the slot counts until a window after that. */
  answered(req: { keyId: string; slot: number; at: number }): void;
}

/** A slot taken for one request. */
export interface Admission {
  /** Milliseconds waited for it, queue included. */
  waitedMs: number;
  /**
   * The request is over (answered or failed). Its slot then counts until a
   * window after now, not after it was taken: the server counted the request
   * when it arrived, somewhere between the two, and a slot that left the
   * window one latency early let the next request in too soon.
   */
  done(): void;
}

/**
 * A sliding-window limiter: at most `limit` admissions in any `WINDOW_MS`,
 * FIFO among the waiters of this process. With a shared window, an admission
 * also needs a slot there, counted with every other process's.
 */
export class RateLimiter {
  #limit: number;
  readonly #clock: Clock;
  /** Admissions of this process in the window, oldest first. */
  readonly #stamps: Array<{ at: number }> = [];
  #tail: Promise<void> = Promise.resolve();
  readonly #shared: { window: SharedRateWindow; keyId: string } | undefined;

  constructor(limit: number, clock: Clock, shared?: { window: SharedRateWindow; keyId: string }) {
    this.#limit = validLimit(limit);
    this.#clock = clock;
    this.#shared = shared;
  }

  get limit(): number {
    return this.#limit;
  }

  /** Lower the limit (never raises it: every caller of a shared key gets the strictest setting). */
  tighten(limit: number): void {
    this.#limit = Math.min(this.#limit, validLimit(limit));
  }

  /** Admissions of this process within the current window. */
  inWindow(): number {
    this.#prune(this.#clock.now());
    return this.#stamps.length;
  }

  /** Milliseconds the next caller of this process would wait now by its own admissions (0 when a slot is free). */
  waitMs(): number {
    const now = this.#clock.now();
    this.#prune(now);
    if (this.#stamps.length < this.#limit) return 0;
    return this.#stamps[this.#stamps.length - this.#limit]!.at + WINDOW_MS - now;
  }

  /** Wait for a slot and take it; call `done()` of the admission when the request is over. Rejects when `signal` aborts. */
  acquire(signal?: AbortSignal): Promise<Admission> {
    // Waiters are served one at a time, in order, so a burst can't overshoot.
    const started = this.#clock.now();
    const run = this.#tail.then(() => this.#take(started, signal));
    this.#tail = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  async #take(started: number, signal?: AbortSignal): Promise<Admission> {
    for (;;) {
      signal?.throwIfAborted();
      let wait = this.waitMs();
      const now = this.#clock.now();
      let slot: number | undefined;
      // This process's own window first (no db write while it is full), then the machine's.
      if (wait <= 0 && this.#shared) {
        const r = this.#takeShared(now, started);
        if ('slot' in r) slot = r.slot;
        else wait = r.waitMs;
      }
      if (wait <= 0) {
        const stamp = { at: now };
        this.#stamps.push(stamp);
        return { waitedMs: now - started, done: () => this.#done(stamp, slot) };
      }
      await this.#clock.sleep(wait, signal);
    }
  }

  /**
   * A slot of the machine's window. While another process holds the state
   * database (STATE_BUSY) wait and ask again, for up to SHARED_BUSY_MAX_MS:
   * a cron `sync` beside a daemon that is rebuilding its snapshot waits its turn.
   */
  #takeShared(now: number, started: number): { slot: number } | { waitMs: number } {
    try {
      return this.#shared!.window.take({ keyId: this.#shared!.keyId, limit: this.#limit, windowMs: WINDOW_MS, now });
    } catch (err) {
      if (!(err instanceof ConnectorError && err.code === 'STATE_BUSY') || now - started >= SHARED_BUSY_MAX_MS) throw err;
      // Ask again soon, then less often: each ask may block the event loop for the short busy timeout.
      return { waitMs: Math.min(SHARED_BUSY_RETRY_MAX_MS, Math.max(SHARED_BUSY_RETRY_MS, Math.floor((now - started) / 4))) };
    }
  }

  #done(stamp: { at: number }, slot: number | undefined): void {
    const now = this.#clock.now();
    if (now > stamp.at) {
      stamp.at = now;
      // A request longer than the window had its stamp pruned: it counts again from its answer.
      if (!this.#stamps.includes(stamp)) this.#stamps.push(stamp);
      this.#stamps.sort((a, b) => a.at - b.at);
    }
    if (slot === undefined || !this.#shared) return;
    try {
      this.#shared.window.answered({ keyId: this.#shared.keyId, slot, at: now });
    } catch {
      // The request is over either way; its slot keeps the time it was taken.
    }
  }

  #prune(now: number): void {
    while (this.#stamps.length > 0 && this.#stamps[0]!.at <= now - WINDOW_MS) this.#stamps.shift();
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

// One limiter per (clock, shared window, key): all clients using a key in this process share its
// budget. Keyed by a hash so that the registry never holds the key itself; per clock so that tests
// with their own fake clocks don't share state; per window so that a limiter never outlives the
// state database it takes slots in (two state dbs in one process, as in tests, are two budgets).
const registry = new WeakMap<Clock, WeakMap<SharedRateWindow | typeof IN_PROCESS, Map<string, RateLimiter>>>();
const IN_PROCESS = {};

/** A short, non-reversible identity of a key (for the registry, the shared window and logs). */
export function keyHash(key: Secret): string {
  return createHash('sha256').update(key.reveal()).digest('hex').slice(0, 16);
}

/**
 * The limiter shared by every client of `key` on `clock` (and `shared`, the
 * state database's window, when the process has one), tightened to `limit` if that is lower.
 */
export function limiterFor(key: Secret, limit: number, clock: Clock, shared?: SharedRateWindow): RateLimiter {
  let byWindow = registry.get(clock);
  if (!byWindow) {
    byWindow = new WeakMap();
    registry.set(clock, byWindow);
  }
  let byKey = byWindow.get(shared ?? IN_PROCESS);
  if (!byKey) {
    byKey = new Map();
    byWindow.set(shared ?? IN_PROCESS, byKey);
  }
  const id = keyHash(key);
  const existing = byKey.get(id);
  if (existing) {
    existing.tighten(limit);
    return existing;
  }
  const created = new RateLimiter(limit, clock, shared ? { window: shared, keyId: id } : undefined);
  byKey.set(id, created);
  return created;
}
