import { stat } from 'node:fs/promises';
import type { Logger } from 'pino';
import { event } from '../log/events.js';
import type { DatasetJob } from '../triggers/queue.js';
import type { ReadyFile } from '../files/ready-file.js';
import type { FileJobResult } from '../files/file-job.js';
import type { Clock } from '../clock.js';

/** Back-off of a file whose sync must be tried again. */
export interface RetryDelays {
  /** First delay after a transient failure; doubles up to maxMs. */
  firstMs: number;
  maxMs: number;
  /** Delay after a stop (auth, API switch, dataset gone) or a foreign draft: the slow schedule. */
  slowMs: number;
}

export const DEFAULT_RETRY: RetryDelays = { firstMs: 30_000, maxMs: 30 * 60_000, slowMs: 15 * 60_000 };

/**
 * Why a pending retry is brought forward: a reload changed what the failed sync depended on, the paused dataset it
 * waited for was resumed, or the change held for a person that it waited for was approved or discarded.
 */
export type RetryNowReason = 'key_changed' | 'config_changed' | 'resumed' | 'held_resolved';

/** The `sync.retry_now` line's message for a reason. */
export function retryNowMessage(reason: RetryNowReason): string {
  if (reason === 'resumed') return 'sync retried now: the dataset it waited for was resumed';
  if (reason === 'held_resolved') return 'sync retried now: the change held for a person that it waited for was approved or discarded';
  return 'sync retried now: a reload changed its key or config';
}

/** A file job of a dataset's queue. */
export type FileJob = Extract<DatasetJob, { kind: 'file' }>;

/** Files from the watched folder: the ones archived and ordered by modification time. */
export const fromFolder = (job: FileJob) => job.origin === 'watch' || job.origin === 'startup';

/** What FileOrder needs of its dataset runtime. */
export interface FileOrderDeps {
  logger: Logger;
  /** The one clock (src/clock.ts): retry back-off waits on its timers. */
  clock: Clock;
  retry: RetryDelays;
  /** Put a job (a retry that is due) on the dataset's queue. */
  push(job: FileJob): void;
  /** Drop a job that must not run (cleanup; a folder file is archived as superseded by `by`). */
  supersede(job: FileJob, by?: ReadyFile): Promise<void>;
  /**
   * Whether a change of the dataset is held for a person (the state db, which `approve`/`discard` from the CLI
   * change), looked at every `everyMs` while a retry waits behind one (HELD_OTHER_FEED, DRAFT_PENDING).
   */
  held?: { now(): boolean; everyMs: number };
}

/**
 * Retries and "newer exports win" for one dataset: a file that
 * must be tried again waits with back-off (doubling, or the slow delay); a file
 * about to run replaces a pending retry of an older one; and a folder file
 * older than one already synced, or than one waiting for its retry, is
 * dropped unsynced. A reapply (the archived last export, after drift) gives
 * way to an export waiting for its retry.
 */
export class FileOrder {
  readonly #deps: FileOrderDeps;
  /** The file waiting for its retry, with the cancel of its timer; `queued` once it is on the queue. */
  #pendingRetry: { job: FileJob; cancel: () => void; slow: boolean; queued?: boolean } | undefined;
  #retryDelay = 0;
  /** Per feed (issue 13; '' the primary), modification time of the newest folder file synced (or found equal): an older one is stale. */
  readonly #newestDone = new Map<string, number>();
  /** A reload changed the key or config while a file job ran with the old ones: its retry, if any, goes at once. */
  #retryAtOnce: RetryNowReason | undefined;

  constructor(deps: FileOrderDeps) {
    this.#deps = deps;
  }

  /** True when an export waits for its retry (its timer pending, or already on the queue): it is newer than any reapply. */
  hasPending(): boolean {
    return this.#pendingRetry !== undefined;
  }

  /** True when `job` is the file waiting for its retry. */
  isPending(job: FileJob): boolean {
    return this.#pendingRetry?.job === job;
  }

  /** True when `job` must not run (it was dropped through `supersede`); call before running a file job. */
  async stale(job: FileJob): Promise<boolean> {
    const pending = this.#pendingRetry;
    // A reapply is an older export whose archived copy may carry a fresh mtime (a copy across file systems):
    // it never takes the place of an export waiting for its retry, whatever the mtimes say.
    if (job.origin === 'reapply' && pending && pending.job !== job) return this.#refuse(job, pending.job.file, 'retry_pending');
    // This job runs with the current key and config: a reload before it has nothing more to bring forward.
    this.#retryAtOnce = undefined;
    if (pending?.job === job) this.#pendingRetry = undefined;
    else if (pending) {
      if (job.file.path !== pending.job.file.path && job.file.mtimeMs < pending.job.file.mtimeMs) {
        return this.#refuse(job, pending.job.file, 'older_than_retry');
      }
      pending.cancel();
      this.#pendingRetry = undefined;
      if (job.file.path !== pending.job.file.path) await this.#deps.supersede(pending.job, job.file);
    }
    const done = this.#newestDone.get(job.feed ?? '');
    if (fromFolder(job) && done !== undefined && job.file.mtimeMs < done) {
      return this.#refuse(job, undefined, 'older_than_last');
    }
    return false;
  }

  /** Note that the newest folder file was synced, whatever comes next of it. */
  accepted(job: FileJob, result: FileJobResult): void {
    if (result.accepted && fromFolder(job)) this.#newestDone.set(job.feed ?? '', Math.max(this.#newestDone.get(job.feed ?? '') ?? -Infinity, job.file.mtimeMs));
  }

  /** After a file job ran (and the daemon is not stopping): schedule its retry, or reset the back-off. */
  ran(job: FileJob, result: FileJobResult): void {
    const atOnce = this.#retryAtOnce;
    this.#retryAtOnce = undefined;
    if (result.next !== 'retry') this.#retryDelay = 0;
    else if (atOnce) this.#retryNow(job, atOnce, result.slow);
    else this.#scheduleRetry(job, result.slow);
  }

  /**
   * A reload changed the dataset's key or config: the pending retry (a stop
   * such as a 401 waits the slow delay) runs now, through the queue, so a newer
   * file still wins. With a file job running on the old key or config, its
   * retry goes at once instead. Nothing pending or running: nothing to do.
   */
  retryNow(reason: RetryNowReason, fileJobRunning: boolean): void {
    const pending = this.#pendingRetry;
    // Already on the queue (its timer fired): it runs with the new key and config anyway.
    if (pending?.queued) return;
    if (pending) {
      pending.cancel();
      this.#retryNow(pending.job, reason, pending.slow);
    } else if (fileJobRunning) this.#retryAtOnce = reason;
  }

  /**
   * Take the export waiting for its retry (its timer cancelled), to run it now with other files (issue 13: one
   * plan of several feeds' files); undefined when none waits. A file of the batch that must be tried again
   * becomes the pending retry again through ran().
   */
  takePending(): FileJob | undefined {
    const pending = this.#pendingRetry;
    if (!pending) return undefined;
    pending.cancel();
    this.#pendingRetry = undefined;
    return pending.job;
  }

  /** `job` is being dropped: its pending retry, if any, goes too. */
  forget(job: FileJob): void {
    if (this.#pendingRetry?.job !== job) return;
    this.#pendingRetry.cancel();
    this.#pendingRetry = undefined;
  }

  /** Cancel a pending retry (stop). */
  cancel(): void {
    this.#pendingRetry?.cancel();
    this.#pendingRetry = undefined;
  }

  async #refuse(job: FileJob, by: ReadyFile | undefined, reason: string): Promise<true> {
    this.#deps.logger.warn(
      event('file.skipped', { file: job.file.path, origin: job.origin, reason, mtime: new Date(job.file.mtimeMs).toISOString() }),
      'file skipped: a newer export was already taken',
    );
    await this.#deps.supersede(job, by);
    return true;
  }

  #scheduleRetry(job: FileJob, slow: boolean): void {
    const r = this.#deps.retry;
    this.#retryDelay = slow ? r.slowMs : Math.min(r.maxMs, this.#retryDelay === 0 ? r.firstMs : this.#retryDelay * 2);
    this.#pendingRetry?.cancel();
    this.#deps.logger.info(event('sync.retry_scheduled', { file: job.file.path, retry_in_ms: this.#retryDelay, slow }), 'sync will be retried');
    const timer = this.#deps.clock.after(this.#retryDelay, () => void this.#retry(job), 'retry');
    let poll: (() => void) | undefined;
    const pending = { job, cancel: () => (timer(), poll?.()), slow };
    this.#pendingRetry = pending;
    // Waiting behind a change held for a person: the file goes as soon as that person approves or discards it
    // (from the CLI, another process), not after the back-off, as a resume is noticed.
    const held = this.#deps.held;
    if (!held?.now()) return;
    const look = () => {
      poll = this.#deps.clock.after(
        held.everyMs,
        () => {
          if (this.#pendingRetry !== pending) return;
          if (held.now()) return look();
          timer();
          this.#retryNow(job, 'held_resolved', slow);
        },
        'held',
      );
    };
    look();
  }

  /** Put `job` on the queue now instead of after its back-off (`slow`: the delay skipped was the slow one); it stays the pending retry until it runs. */
  #retryNow(job: FileJob, reason: RetryNowReason, slow: boolean): void {
    this.#deps.logger.info(event('sync.retry_now', { file: job.file.path, reason, slow }), retryNowMessage(reason));
    this.#pendingRetry = { job, cancel: () => undefined, slow };
    void this.#retry(job);
  }

  async #retry(job: FileJob): Promise<void> {
    const pending = this.#pendingRetry;
    if (pending?.job !== job) return;
    const there = await stat(job.file.path).catch(() => undefined);
    // Superseded, cancelled or brought forward while we looked: that decision stands.
    if (this.#pendingRetry !== pending) return;
    // A file moved away meanwhile is not retried.
    if (!there) {
      this.#pendingRetry = undefined;
      return;
    }
    // It stays pending until it runs, so a newer file running first supersedes it.
    pending.queued = true;
    this.#deps.push(job);
  }
}
