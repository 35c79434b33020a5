import type { Logger } from 'pino';
import type { DatasetConfig } from '../config/schema.js';
import { event } from '../log/events.js';
import type { DatasetJob } from '../triggers/queue.js';
import { DatasetScheduler, nameSchedules, nodeCronStarterWith, type CronStarter, type NamedSchedule } from '../triggers/scheduler.js';
import { FolderWatcher } from '../triggers/watcher.js';
import type { ReadyFile } from '../files/ready-file.js';
import { ConnectorError } from '../errors.js';
import type { Clock } from '../clock.js';
import { feedView, hasFeeds } from '../feeds/view.js';
import type { HealthState } from './health-state.js';
import type { DaemonState } from './ports.js';
import { runSchedule } from './schedule-actions.js';
import { WATCH_HINTS, WatchSupervisor } from './watch-supervisor.js';

/** What a dataset's feed triggers need from its runtime. */
export interface FeedTriggerDeps {
  logger: Logger;
  health: HealthState;
  state: DaemonState;
  clock: Clock;
  timezone: string;
  /** Folder for temporary files (command stdout). */
  tmpDir: string;
  cronStarter?: CronStarter;
  /** Hand a job to the dataset's queue. */
  push(job: DatasetJob): boolean;
  /** A file superseded before it ran (an older one found at start): archived as the feed's watch says. */
  archive(file: ReadyFile, feed: string): Promise<void>;
  /** A file of a feed's folder was handed on, or one still arriving went away (the coalescing wait looks again). */
  onFolderChange?(): void;
  /** `run --once`: a folder that cannot be read (its exit code). */
  onError?: (dataset: string, err: unknown) => void;
}

/**
 * The triggers of one dataset's feeds (issue 13): each feed with a folder
 * has its watch, each with schedules its scheduler, and a file of a feed's
 * folder or schedule goes on the dataset's queue tagged with that feed.
 */
export class FeedTriggers {
  #ds: DatasetConfig;
  readonly #deps: FeedTriggerDeps;
  /** One watch per feed with a folder, by feed name. */
  readonly #watches = new Map<string, WatchSupervisor>();
  #schedulers: Array<{ s: DatasetScheduler; abort: AbortController }> = [];

  constructor(ds: DatasetConfig, deps: FeedTriggerDeps) {
    this.#ds = ds;
    this.#deps = deps;
  }

  /** The dataset's configuration the triggers run by (a reload replaces it). */
  set config(ds: DatasetConfig) {
    this.#ds = ds;
  }

  /** The primary feed's watch: its folder and whether it is watched (the dataset.started line). */
  get primary(): { dir: string; watching: boolean } | undefined {
    return this.#watches.get(this.#ds.feed);
  }

  /** The other feeds' watched folders (the dataset.started line). */
  get otherWatched(): Array<{ feed: string; watch: string }> {
    return [...this.#watches.entries()].filter(([f]) => f !== this.#ds.feed).map(([feed, w]) => ({ feed, watch: w.dir }));
  }

  /** How many schedules run. */
  get scheduleCount(): number {
    return this.#schedulers.reduce((n, x) => n + x.s.schedules.length, 0);
  }

  /** The feeds other than `feed` whose folder is receiving files now (seen, not yet ready), with how many. */
  arrivingElsewhere(feed: string): Array<{ feed: string; files: number }> {
    return [...this.#watches.entries()].filter(([f, w]) => f !== feed && w.settling > 0).map(([f, w]) => ({ feed: f, files: w.settling }));
  }

  /** Each feed's watch and schedules. */
  async start(): Promise<void> {
    const ds = this.#ds;
    const log = this.#deps.logger;
    const waitedAtStart = new Set((this.#deps.state.waiting?.all(ds.name) ?? []).map((w) => w.file));
    for (const feed of feedNames(ds)) {
      const view = feedView(ds, feed);
      const tag = feedTag(ds, feed);
      if (view.watch) {
        const w = new WatchSupervisor(
          view.watch,
          {
            onReady: (file) => {
              // A file moved away and back (or written again) is a new export: its wait, if it comes to one, starts
              // now. Only the start's scan finding a file that waited already keeps its first time.
              if (!waitedAtStart.delete(file.path)) this.#deps.state.waiting?.done(ds.name, file.path);
              this.#deps.push({ kind: 'file', file, origin: 'watch', ...tag(file) });
              this.#deps.onFolderChange?.();
            },
            onSuperseded: (file) => void this.#deps.archive(file, feed),
            onSettleDropped: () => this.#deps.onFolderChange?.(),
          },
          { dataset: ds.name, logger: log, health: this.#deps.health, clock: this.#deps.clock, ...(keepsAll(ds, feed) ? { keepAll: true } : {}) },
        );
        this.#watches.set(feed, w);
        await w.start();
      }
      if (view.schedules.length > 0) {
        const abort = new AbortController();
        const named = nameSchedules(view.schedules).map((n) => (feed === ds.feed ? n : { ...n, name: `${feed}:${n.name}` }));
        const s = new DatasetScheduler(
          named,
          this.#deps.timezone,
          (sched) => this.#fire(feed, sched, abort.signal),
          this.#deps.cronStarter ?? nodeCronStarterWith(log),
          (sched) => log.warn(event('schedule.skipped', { schedule: sched.name, reason: 'still_running' }), 'schedule skipped: its last run has not ended'),
        );
        s.start();
        this.#schedulers.push({ s, abort });
      }
    }
  }

  /** A reload with the same triggers: a watch that is not running is tried again. */
  async restartIfFailed(): Promise<void> {
    for (const w of this.#watches.values()) await w.restartIfFailed();
  }

  async stop(): Promise<void> {
    // A running export command is killed (its process group), not left behind.
    for (const x of this.#schedulers) x.abort.abort();
    for (const x of this.#schedulers) await x.s.stop();
    this.#schedulers = [];
    for (const w of this.#watches.values()) await w.close();
    this.#watches.clear();
    this.#deps.health.clear(this.#ds.name, 'watch');
  }

  /** `run --once`: queue the newest export waiting in each feed's folder (the others are superseded, as at a start; every file of an update feed or change list). */
  async takeWaiting(): Promise<void> {
    for (const feed of feedNames(this.#ds)) await this.#takeWaitingOf(feed);
  }

  async #takeWaitingOf(feed: string): Promise<void> {
    const ds = feedView(this.#ds, feed);
    if (!ds.watch) return;
    const log = this.#deps.logger;
    let files: ReadyFile[];
    try {
      files = await new FolderWatcher(ds.watch, { onReady: () => undefined, onSuperseded: () => undefined }, { logger: log }).waiting();
    } catch (err) {
      const errno = (err as NodeJS.ErrnoException).code ?? 'WATCH_FAILED';
      this.#deps.health.set(ds.name, 'watch', 'WATCH_FAILED', `cannot read ${ds.watch.path}: ${errno}`, this.#deps.clock.now());
      log.error(event('watch.failed', { watch: ds.watch.path, code: 'WATCH_FAILED', errno }), 'cannot read the export folder');
      const hint = WATCH_HINTS[errno];
      // A folder that is missing or not ours is a setting to fix (run --once exits 78 for it); anything else may pass.
      this.#deps.onError?.(
        ds.name,
        hint !== undefined
          ? new ConnectorError('WATCH_FOLDER_UNUSABLE', `cannot read the export folder ${ds.watch.path} (${errno}): ${hint}`, { action: 'stop', context: { dataset: ds.name, file: ds.watch.path, setting: 'watch.path' } })
          : new ConnectorError('WATCH_FAILED', `cannot read the export folder ${ds.watch.path}: ${errno}`, { action: 'retry', context: { dataset: ds.name, file: ds.watch.path } }),
      );
      return;
    }
    const tag = feedTag(this.#ds, feed);
    if (keepsAll(this.#ds, feed)) {
      for (const f of [...files].reverse()) this.#deps.push({ kind: 'file', file: f, origin: 'startup', ...tag(f) });
      return;
    }
    const [newest, ...older] = files;
    for (const f of older) await this.#deps.archive(f, feed);
    if (newest) this.#deps.push({ kind: 'file', file: newest, origin: 'startup', ...tag(newest) });
  }

  #fire(feed: string, s: NamedSchedule, signal: AbortSignal): Promise<void> {
    const ds = this.#ds;
    const log = this.#deps.logger;
    const paused = this.#deps.state.feedPaused?.(ds.name, feed) ?? null;
    if (paused) {
      // Issue 14 with feeds: a paused feed's schedules do nothing until resume --feed (the others go on).
      log.info(event('schedule.skipped', { schedule: s.name, feed, reason: 'feed_paused', paused_since: new Date(paused.at).toISOString() }), 'schedule skipped: its feed is paused');
      return Promise.resolve();
    }
    log.info(event('schedule.fired', { schedule: s.name, type: s.config.type, ...(feed === ds.feed ? {} : { feed }) }), 'schedule fired');
    const tag = feedTag(ds, feed);
    return runSchedule(feedView(ds, feed), s, {
      signal,
      push: (job) => this.#deps.push(job.kind === 'file' ? { ...job, ...tag(job.file) } : job),
      state: this.#deps.state,
      health: this.#deps.health,
      logger: log,
      clock: this.#deps.clock,
      tmpDir: this.#deps.tmpDir,
    });
  }
}

/** Whether every file of `feed` counts (an update feed or change list: each says something the others may not) rather than only its newest. */
export function keepsAll(ds: DatasetConfig, feed: string): boolean {
  return hasFeeds(ds) && ds.feeds[feed]?.role !== 'full';
}

/** What a file job of `feed` carries: the feed (none for the primary one) and its queue slot (one per file when every file counts). */
function feedTag(ds: DatasetConfig, feed: string): (file: ReadyFile) => { feed?: string; slot?: string } {
  const keepAll = keepsAll(ds, feed);
  if (feed === ds.feed && !keepAll) return () => ({});
  return (file) => ({ ...(feed === ds.feed ? {} : { feed }), slot: keepAll ? `${feed}\0${file.path}` : feed });
}

/** What the triggers are made of: a reload restarts them only when this changed. */
export function triggersOf(ds: DatasetConfig): unknown {
  const feeds = Object.entries(ds.feeds ?? {}).filter(([name]) => name !== ds.feed);
  return { watch: ds.watch ?? null, schedules: ds.schedules, feeds: Object.fromEntries(feeds.map(([name, f]) => [name, { watch: f.watch ?? null, schedules: f.schedules, role: f.role }])) };
}

/** The dataset's feeds, its primary first (a dataset built without feeds: its one). */
export function feedNames(ds: DatasetConfig): string[] {
  return [ds.feed, ...Object.keys(ds.feeds ?? {}).filter((f) => f !== ds.feed)];
}
