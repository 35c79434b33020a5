import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { event } from '../log/events.js';
import type { WatchConfig } from '../config/watch.js';
import { FolderWatcher, type FolderWatcherEvents } from '../triggers/watcher.js';
import type { HealthState } from './health-state.js';
import type { Clock } from '../clock.js';

/** What to do about a watch folder that cannot be watched, by errno. */
/** What to do about a watch folder that cannot be used, by errno: a setting or a permission to fix, not a fault. */
export const WATCH_HINTS: Record<string, string> = {
  ENOENT: 'the folder does not exist: create it, mount the share, or fix watch.path; it is watched as soon as it is there',
  ENOTDIR: 'watch.path is not a folder: fix watch.path',
  EACCES: 'the service user may not read the folder: grant it read, write and enter (under systemd, list the folder in ReadWritePaths=)',
  EPERM: 'the service user may not read the folder: grant it read, write and enter (under systemd, list the folder in ReadWritePaths=)',
};

/** Back-off of watcher restarts, and how often a running watch checks its folder is still the same. */
export const WATCH_RESTART = { firstMs: 1_000, maxMs: 60_000, checkMs: 10_000 };

/** What a watch supervisor needs. */
export interface WatchSupervisorDeps {
  dataset: string;
  logger: Logger;
  health: HealthState;
  /** The one clock (src/clock.ts): restarts wait on its timers. */
  clock: Clock;
  /** Hand on every file found at start-up, not only the newest (an update feed or change list, issue 13). */
  keepAll?: boolean;
}

/**
 * Keeps one folder watched: a folder missing at start-up
 * (share not yet mounted), removed, renamed or remounted is watched again
 * once it is back, retried with back-off; meanwhile /healthz says the
 * dataset is not watching. A reload calls `restartIfFailed` to try at once.
 */
export class WatchSupervisor {
  readonly #cfg: WatchConfig;
  readonly #events: FolderWatcherEvents;
  readonly #deps: WatchSupervisorDeps;
  #watcher: FolderWatcher | undefined;
  #cancelTimer: (() => void) | undefined;
  #delayMs = 0;
  #closed = false;
  /** Starting, so a timer and a reload never start two watchers. */
  #busy: Promise<void> | undefined;

  constructor(cfg: WatchConfig, events: FolderWatcherEvents, deps: WatchSupervisorDeps) {
    this.#cfg = cfg;
    this.#events = events;
    this.#deps = deps;
  }

  /** The watched folder (absolute). */
  get dir(): string {
    return resolve(this.#cfg.path);
  }

  /** How many files of the folder are being received (seen, not yet ready); 0 while not watching. */
  get settling(): number {
    return this.#watcher?.settling ?? 0;
  }

  /** True while a watcher runs on the folder. */
  get watching(): boolean {
    return this.#watcher !== undefined && !this.#watcher.lost;
  }

  /** Start watching; a failure is reported and retried, never thrown. */
  start(): Promise<void> {
    return this.#attempt(false);
  }

  /** SIGHUP: a watch that is not running is tried again now. */
  async restartIfFailed(): Promise<void> {
    if (this.#closed || this.watching) return;
    this.#delayMs = 0;
    await this.#attempt(false);
  }

  /** Stop watching and every pending restart or check. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#cancelTimer?.();
    await this.#busy;
    await this.#watcher?.close();
    this.#watcher = undefined;
  }

  #attempt(retrying: boolean): Promise<void> {
    this.#busy ??= this.#startOnce(retrying).finally(() => (this.#busy = undefined));
    return this.#busy;
  }

  async #startOnce(retrying: boolean): Promise<void> {
    if (this.#closed || this.watching) return;
    this.#cancelTimer?.();
    const { health, dataset, logger, clock } = this.#deps;
    const w = new FolderWatcher(this.#cfg, { ...this.#events, onLost: (reason) => void this.#lost(w, reason) }, { logger, ...(this.#deps.keepAll ? { keepAll: true } : {}) });
    try {
      await w.start();
    } catch (err) {
      await w.close();
      const code = (err as NodeJS.ErrnoException).code ?? 'WATCH_FAILED';
      const first = !retrying || health.report().reasons.every((r) => r.dataset !== dataset || r.topic !== 'watch');
      health.set(dataset, 'watch', 'WATCH_FAILED', `not watching ${w.dir}: ${code}; retrying until the folder can be read`, clock.now());
      this.#schedule('watch.restart', this.#nextDelay());
      // A folder that is not there or not ours is a setting to fix, not a fault: the fix, no stack trace.
      const hint = WATCH_HINTS[code];
      const fields = { watch: w.dir, code: 'WATCH_FAILED', errno: code, retry_in_ms: this.#delayMs, ...(hint ? { hint } : { err }) };
      if (first) logger.error(event('watch.failed', fields), 'cannot watch folder');
      else logger.debug(event('watch.failed', fields), 'still cannot watch folder');
      return;
    }
    if (this.#closed) {
      await w.close();
      return;
    }
    this.#watcher = w;
    this.#delayMs = 0;
    if (retrying || health.report().reasons.some((r) => r.dataset === dataset && r.topic === 'watch')) {
      logger.info(event('watch.started', { watch: w.dir }), 'watching folder again');
    }
    health.clear(dataset, 'watch');
    this.#schedule('watch.check', WATCH_RESTART.checkMs);
  }

  /** The folder went away under a running watcher: report, close it, try again later. */
  async #lost(w: FolderWatcher, reason: string): Promise<void> {
    if (this.#closed || this.#watcher !== w) return;
    this.#watcher = undefined;
    this.#cancelTimer?.();
    const { health, dataset, logger, clock } = this.#deps;
    health.set(dataset, 'watch', 'WATCH_LOST', `not watching ${w.dir}: ${reason}; watching again once it is back`, clock.now());
    logger.error(event('watch.failed', { watch: w.dir, code: 'WATCH_LOST', reason }), 'watched folder lost');
    await w.close();
    this.#delayMs = 0;
    this.#schedule('watch.restart', this.#nextDelay());
  }

  async #check(): Promise<void> {
    const w = this.#watcher;
    if (this.#closed || !w) return;
    const why = await w.rootChanged();
    if (why) await this.#lost(w, why);
    else if (this.#watcher === w) this.#schedule('watch.check', WATCH_RESTART.checkMs);
  }

  #nextDelay(): number {
    this.#delayMs = this.#delayMs === 0 ? WATCH_RESTART.firstMs : Math.min(WATCH_RESTART.maxMs, this.#delayMs * 2);
    return this.#delayMs;
  }

  #schedule(label: 'watch.restart' | 'watch.check', ms: number): void {
    this.#cancelTimer?.();
    if (this.#closed) return;
    this.#cancelTimer = this.#deps.clock.after(
      ms,
      () => {
        this.#cancelTimer = undefined;
        void (label === 'watch.check' ? this.#check() : this.#attempt(true));
      },
      label,
    );
  }
}
