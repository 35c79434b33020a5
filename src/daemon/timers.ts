/**
 * Timers of the daemon's own waits (retry back-off, watcher restarts, root
 * checks), injected so tests fire them by hand instead of sleeping.
 */
export interface Timers {
  /** Call `fn` once after `ms`; `label` names the wait for tests. Returns a cancel function. */
  after(ms: number, fn: () => void, label: string): () => void;
}

/** Real timers; unref'd, so a wait alone never keeps the process alive. */
export const systemTimers: Timers = {
  after(ms, fn) {
    const t = setTimeout(fn, ms);
    t.unref();
    return () => clearTimeout(t);
  },
};
