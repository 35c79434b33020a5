import { setTimeout as delay } from 'node:timers/promises';

/**
 * Time as the connector sees it, the one way it is injected (house style 2):
 * the time now, a wait a caller awaits, and a timer that calls back. Tests
 * pass their own (the emulator's clock, a clock whose timers they fire by
 * hand) and never sleep in real time.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolve after `ms`, or reject with the signal's reason when it aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /**
   * Call `fn` once after `ms` (retry back-off, watcher restarts); `label` names
   * the wait for tests. Returns a cancel function. A wait alone never keeps
   * the process alive.
   */
  after(ms: number, fn: () => void, label: string): () => void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: async (ms, signal) => {
    await delay(Math.max(0, ms), undefined, signal ? { signal } : undefined);
  },
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    t.unref();
    return () => clearTimeout(t);
  },
};
