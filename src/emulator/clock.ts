import { setTimeout as delay } from 'node:timers/promises';
import type { Clock } from '../clock.js';

/**
 * The emulator's time. In `real` mode it follows the wall clock plus an offset
 * that `advance()` grows, so a test can pass 24 hours in a millisecond while
 * timers keep running. In `manual` mode time stands still until advanced, and
 * `sleep()` advances it instead of waiting (so a client given this clock never
 * waits in real time) and fires the timers of `after()` that come due.
 */
export class EmulatorClock implements Clock {
  readonly mode: 'real' | 'manual';
  #offsetMs = 0;
  #manualNowMs: number;
  readonly #timers = new Set<{ due: number; fn: () => void }>();

  constructor(opts: { mode?: 'real' | 'manual'; startMs?: number } = {}) {
    this.mode = opts.mode ?? 'real';
    this.#manualNowMs = opts.startMs ?? Date.now();
    if (this.mode === 'real' && opts.startMs !== undefined) this.#offsetMs = opts.startMs - Date.now();
  }

  /** Milliseconds since the epoch, as the emulator sees it. */
  now(): number {
    return this.mode === 'manual' ? this.#manualNowMs : Date.now() + this.#offsetMs;
  }

  /** Move time forward by `ms` (drafts expire, jobs finish, rate windows slide). */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError('advance() takes a non-negative number of milliseconds');
    if (this.mode === 'manual') this.#manualNowMs += ms;
    else this.#offsetMs += ms;
    this.#fireDue();
  }

  /** Real mode: an unref'd timer. Manual mode: runs when `advance()` reaches its time. */
  after(ms: number, fn: () => void): () => void {
    if (this.mode === 'real') {
      const t = setTimeout(fn, ms);
      t.unref();
      return () => clearTimeout(t);
    }
    const timer = { due: this.now() + Math.max(0, ms), fn };
    this.#timers.add(timer);
    return () => void this.#timers.delete(timer);
  }

  #fireDue(): void {
    const due = [...this.#timers].filter((t) => t.due <= this.now()).sort((a, b) => a.due - b.due);
    for (const t of due) {
      this.#timers.delete(t);
      t.fn();
    }
  }

  /** Real mode: wait. Manual mode: advance time by `ms` and resolve at once. */
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    if (this.mode === 'manual') {
      this.advance(Math.max(0, ms));
      await Promise.resolve();
      return;
    }
    await delay(Math.max(0, ms), undefined, signal ? { signal } : undefined);
  }

  /** ISO-8601 text of the current emulator time. */
  iso(): string {
    return new Date(this.now()).toISOString();
  }
}

/** A clock that follows real time (the default), or stands still when `mode: 'manual'`. */
export function createEmulatorClock(opts?: { mode?: 'real' | 'manual'; startMs?: number }): EmulatorClock {
  return new EmulatorClock(opts);
}
