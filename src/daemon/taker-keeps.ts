import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { event } from '../log/events.js';
import { fanOutNext, type TakerOutcome } from '../files/fan-out-job.js';
import type { Taker } from '../snapshot/export-takers.js';
import { PAUSE_POLL_MS } from './dataset-runtime.js';
import { DEFAULT_RETRY, retryNowMessage, type FileJob, type RetryDelays, type RetryNowReason } from './file-order.js';
import type { DaemonState } from './ports.js';

/** A taker's key in the fan-out's maps and plan. */
export const keyOf = (t: Taker) => `${t.dataset}/${t.feed}`;

/** What the takers' keeps need of the export runtime. */
export interface TakerKeepsDeps {
  clock: Clock;
  retry?: RetryDelays;
  state: DaemonState;
  logger: Logger;
  /** Aborted when the export stops: nothing is freed after that. */
  stopping: AbortSignal;
  /** The kept file goes again for its taker (its retry is due, or what it waited for ended). */
  again(job: FileJob): void;
}

/** A taker keeping a file: its retry timer (and, paused or held, the look for its end). */
interface Kept {
  file: string;
  cancel: () => void;
}

/**
 * The takers of a shared export that keep a file (issue 13's fan-out), each
 * with its own back-off since its last file taken: a kept file holds back
 * only its taker. A paused taker, or one behind a change held for a person
 * (HELD_OTHER_FEED), has the state db looked at every PAUSE_POLL_MS until a
 * resume, approve or discard (the CLI, another process): the file goes then,
 * not after the back-off.
 */
export class TakerKeeps {
  readonly #deps: TakerKeepsDeps;
  readonly #kept = new Map<string, Kept>();
  readonly #delays = new Map<string, number>();

  constructor(deps: TakerKeepsDeps) {
    this.#deps = deps;
  }

  /** The taker keeps a file now (it takes no other). */
  has(t: Taker): boolean {
    return this.#kept.has(keyOf(t));
  }

  /** The path of the file the taker keeps, if any. */
  fileOf(t: Taker): string | undefined {
    return this.#kept.get(keyOf(t))?.file;
  }

  /** The taker took a file (done, rejected, skipped): its back-off starts over. */
  reset(t: Taker): void {
    this.#delays.delete(keyOf(t));
  }

  /** The taker keeps the file: its retry after its own back-off; paused, at its resume; behind a held change, at its approve or discard. */
  keep(t: Taker, job: FileJob, o: TakerOutcome): void {
    const key = keyOf(t);
    const { clock, retry = DEFAULT_RETRY, state, logger } = this.#deps;
    const next = fanOutNext([o]);
    const slow = next.next === 'retry' && next.slow;
    const prev = this.#delays.get(key) ?? 0;
    const delay = slow ? retry.slowMs : Math.min(retry.maxMs, prev === 0 ? retry.firstMs : prev * 2);
    this.#delays.set(key, delay);
    this.#kept.get(key)?.cancel();
    logger.info(event('sync.retry_scheduled', { file: job.file.path, dataset: t.dataset, feed: t.feed, retry_in_ms: delay, slow }), 'sync will be retried');
    const free = (reason?: RetryNowReason) => {
      if (this.#kept.get(key) !== kept || this.#deps.stopping.aborted) return;
      kept.cancel();
      this.#kept.delete(key);
      if (reason) logger.info(event('sync.retry_now', { file: job.file.path, dataset: t.dataset, feed: t.feed, reason, slow }), retryNowMessage(reason));
      this.#deps.again(job);
    };
    const waitsFor: RetryNowReason | undefined = o.result === 'paused' ? 'resumed' : state.held(t.dataset) ? 'held_resolved' : undefined;
    const still = () => (waitsFor === 'resumed' ? Boolean(state.paused?.(t.dataset) || state.feedPaused?.(t.dataset, t.feed)) : state.held(t.dataset) !== null);
    let poll: (() => void) | undefined;
    const look = () => {
      poll = clock.after(PAUSE_POLL_MS, () => (still() ? look() : free(waitsFor)), waitsFor === 'resumed' ? 'pause' : 'held');
    };
    const timer = clock.after(delay, () => free(), 'retry');
    if (waitsFor) look();
    const kept: Kept = { file: job.file.path, cancel: () => (timer(), poll?.()) };
    this.#kept.set(key, kept);
  }

  /** Every keep's timers go (stop). */
  cancelAll(): void {
    for (const k of this.#kept.values()) k.cancel();
    this.#kept.clear();
  }
}
