import type { Clock } from '../clock.js';

/** The wait a dataset's ready file makes for its other feeds' files still arriving, when they were complete or the bound passed. */
export type WindowEnd = 'quiet' | 'interval' | 'stopped';

/**
 * Issue 13's "a catalogue and a stock file arriving together make one plan",
 * without depending on which of the two settles first: when a feed's file is
 * ready while the dataset's other feed folders are still receiving files,
 * the plan waits for them, at most `ms` from that moment. The bound is never
 * moved on by later arrivals, so a stream of files cannot postpone a sync.
 * The owner calls `look()` whenever a file becomes ready or one still
 * arriving goes away; the wait then ends as soon as nothing is arriving.
 */
export class CoalesceWindow {
  readonly #clock: Clock;
  #look: (() => void) | undefined;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /**
   * Resolve once `arriving()` is empty (when looked at again), or `ms` has
   * passed on the clock, or `signal` aborts; at once (null) when nothing is
   * arriving now or `ms` is 0.
   */
  wait(arriving: () => readonly unknown[], ms: number, signal: AbortSignal): Promise<WindowEnd> | null {
    if (ms <= 0 || signal.aborted || arriving().length === 0) return null;
    return new Promise<WindowEnd>((resolve) => {
      const end = (how: WindowEnd) => {
        cancel();
        signal.removeEventListener('abort', stopped);
        this.#look = undefined;
        resolve(how);
      };
      const stopped = () => end('stopped');
      const cancel = this.#clock.after(ms, () => end('interval'), 'coalesce');
      signal.addEventListener('abort', stopped, { once: true });
      this.#look = () => {
        if (arriving().length === 0) end('quiet');
      };
    });
  }

  /** Something changed in the folders (a file ready, a file that was arriving gone): a wait looks again. */
  look(): void {
    this.#look?.();
  }
}
