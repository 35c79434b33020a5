import { basename } from 'node:path';
import type { Logger } from 'pino';
import type { DatasetConfig } from '../config/schema.js';
import { canonicalJson } from '../model/canonical.js';
import { event } from '../log/events.js';
import { DatasetQueue, type DatasetJob } from '../triggers/queue.js';
import { DatasetScheduler, nameSchedules, nodeCronStarterWith, type CronStarter, type NamedSchedule } from '../triggers/scheduler.js';
import { FolderWatcher } from '../triggers/watcher.js';
import type { ReadyFile } from '../files/ready-file.js';
import type { SyncSummary } from '../sync/outcome.js';
import { disposeReported } from '../files/dispose-reported.js';
import { driftHealth, repairDrift, requeuePendingReapply } from './drift-repair.js';
import { pruneArchives } from '../files/prune.js';
import { WATCH_HINTS } from './watch-supervisor.js';
import { ConnectorError } from '../errors.js';
import { runFileJob, type FileJobDeps, type FileJobResult } from '../files/file-job.js';
import { DEFAULT_RETRY, FileOrder, fromFolder, type FileJob, type RetryDelays, type RetryNowReason } from './file-order.js';
import type { HealthState } from './health-state.js';
import type { DaemonEngine, DaemonState } from './ports.js';
import { syncHeldHealth } from './held-health.js';
import type { DaemonMetrics } from './metrics.js';
import { runSchedule } from './schedule-actions.js';
import { WatchSupervisor } from './watch-supervisor.js';
import { feedView, hasFeeds } from '../feeds/view.js';
import { runFileBatch } from '../files/file-batch.js';

/** processed/ and failed/ are pruned at start, then after a disposal at most this often. */
const PRUNE_EVERY_MS = 3_600_000;

/**
 * History is pruned at start, after a file job at most every PRUNE_EVERY_MS,
 * and on this timer, so an idle or paused daemon prunes too (issue 14).
 */
export const HISTORY_PRUNE_TIMER_MS = 86_400_000;

/** While exports wait for a paused dataset, how often the state db is read for a resume (from the CLI). */
export const PAUSE_POLL_MS = 5_000;

/** Everything a dataset runtime shares with the daemon. */
export interface RuntimeDeps extends Omit<FileJobDeps, 'engine' | 'state' | 'logger' | 'onSummary' | 'onError'> {
  engine: DaemonEngine;
  state: DaemonState;
  logger: Logger;
  metrics: DaemonMetrics;
  health: HealthState;
  /** Folder for temporary files (command stdout). */
  tmpDir: string;
  cronStarter?: CronStarter;
  retry?: RetryDelays;
  /** `run --once`: take what waits in the folder now, start no watcher and no schedule. */
  once?: boolean;
  /** Each finished sync and each file job that threw (`run --once` exits by them). */
  onSummary?: (s: SyncSummary) => void;
  onError?: (dataset: string, err: unknown) => void;
}

/**
 * One dataset served by the daemon: its watcher and schedules feed its queue,
 * which runs one job at a time against the engine. The queue outlives a
 * reconfigure, so a reload never drops work in flight or waiting.
 */
export class DatasetRuntime {
  #ds: DatasetConfig;
  readonly #deps: RuntimeDeps;
  readonly #log: Logger;
  readonly #queue: DatasetQueue;
  /** One watch per feed with a folder (issue 13), by feed name. */
  #watches = new Map<string, WatchSupervisor>();
  #schedulers: Array<{ s: DatasetScheduler; abort: AbortController }> = [];
  /** The other files of a batch that must be tried again, waiting with the batch's newest file (FileOrder's pending retry). */
  readonly #companions = new Map<FileJob, FileJob[]>();
  readonly #order: FileOrder;
  #lastPruneAt: number | undefined;
  /** Exports that came while the dataset was paused (issue 14), in arrival order; queued again at resume. */
  #parked: Array<Extract<DatasetJob, { kind: 'file' }>> = [];
  #pausePoll: (() => void) | undefined;
  /** An interrupted plan was left open because the dataset is paused: continued at resume. */
  #resumeJournal = false;
  #lastHistoryPruneAt: number | undefined;
  #historyTimer: (() => void) | undefined;
  /** Aborted by stop(): the running sync ends at its next journaled step instead of running to the end. */
  readonly #stopping = new AbortController();

  constructor(ds: DatasetConfig, deps: RuntimeDeps) {
    this.#ds = ds;
    this.#deps = deps;
    this.#log = deps.logger.child({ dataset: ds.name });
    this.#queue = new DatasetQueue({
      run: (job) => this.#run(job),
      superseded: (job, by) => {
        // A folder file says so when archived; a reapply is only dropped.
        if (job.origin === 'reapply') this.#log.info(event('file.skipped', { file: job.file.path, origin: job.origin, reason: 'superseded', by: by.path }), 'file skipped');
        void this.#supersede(job, by);
      },
      depthChanged: (depth) => deps.metrics.queueDepth.set({ dataset: this.#ds.name }, depth),
    });
    this.#order = new FileOrder({
      logger: this.#log,
      clock: this.#deps.clock,
      retry: deps.retry ?? DEFAULT_RETRY,
      push: (job) => void this.#queue.push(job),
      supersede: (job, by) => this.#supersede(job, by),
    });
  }

  get name(): string {
    return this.#ds.name;
  }

  get config(): DatasetConfig {
    return this.#ds;
  }

  /** Jobs waiting or running. */
  get depth(): number {
    return this.#queue.depth;
  }

  /** Resume the journal first, then start the folder watcher and the schedules. */
  async start(): Promise<void> {
    this.#deps.health.addDataset(this.name);
    this.#queue.push({ kind: 'resume' });
    // Before the watcher: an export found in the folder at start then wins over it in the queue.
    await requeuePendingReapply(this.#ds, { state: this.#deps.state, logger: this.#log, push: (j) => this.#queue.push(j) });
    driftHealth(this.#ds, this.#deps);
    if (this.#deps.once) await this.#takeWaiting();
    else await this.#startTriggers();
    await this.#prune();
    this.#pruneHistory();
    if (!this.#deps.once) this.#armHistoryPrune();
    const primary = this.#watches.get(this.#ds.feed);
    const feeds = [...this.#watches.entries()].filter(([f]) => f !== this.#ds.feed).map(([feed, w]) => ({ feed, watch: w.dir }));
    this.#log.info(
      event('dataset.started', {
        watch: primary?.dir ?? null,
        watching: primary?.watching ?? null,
        schedules: this.#schedulers.reduce((n, x) => n + x.s.schedules.length, 0),
        ...(feeds.length > 0 ? { feeds_watched: feeds } : {}),
      }),
      'dataset started',
    );
  }

  /**
   * Take a (re)loaded configuration. Triggers restart only when watch or
   * schedules changed, else a watch that is not running is tried again; the
   * running job finishes with the config it began with, waiting jobs run
   * with the new one. `changed` (the reload changed this dataset's key or
   * config): an export waiting for its retry, e.g. after a 401 stopped the
   * dataset, is tried again now rather than on the slow schedule.
   */
  async reconfigure(ds: DatasetConfig, changed?: RetryNowReason): Promise<void> {
    const triggersChanged =
      canonicalJson(triggersOf(ds)) !== canonicalJson(triggersOf(this.#ds));
    this.#ds = ds;
    if (triggersChanged) {
      await this.#stopTriggers();
      await this.#startTriggers();
    } else for (const w of this.#watches.values()) await w.restartIfFailed();
    if (changed) this.#order.retryNow(changed, this.#queue.running?.kind === 'file');
  }

  /** Enqueue a job by hand (tests, the CLI). */
  push(job: DatasetJob): boolean {
    return this.#queue.push(job);
  }

  /** Resolves when nothing is waiting or running. */
  idle(): Promise<void> {
    return this.#queue.idle();
  }

  /**
   * Stop triggers and the running job at its next journaled step (the next
   * start resumes it); waiting jobs are dropped (they come back at the next start).
   */
  async stop(): Promise<void> {
    this.#stopping.abort();
    this.#order.cancel();
    this.#pausePoll?.();
    this.#historyTimer?.();
    // Files stay in the folder (taken again at the next start); a command's output is removed.
    for (const job of this.#parked.splice(0)) await job.cleanup?.().catch(() => undefined);
    await this.#stopTriggers();
    const left = await this.#queue.stop();
    for (const job of left) if (job.kind === 'file') await job.cleanup?.().catch(() => undefined);
    this.#deps.health.removeDataset(this.name);
    this.#deps.metrics.forget(this.name);
    this.#log.info(event('dataset.stopped', { dropped_jobs: left.length }), 'dataset stopped');
  }

  /** Each feed's watch and schedules (issue 13): a file of a feed's folder or schedule is synced through that feed. */
  async #startTriggers(): Promise<void> {
    const ds = this.#ds;
    for (const feed of feedNames(ds)) {
      const view = feedView(ds, feed);
      const tag = this.#feedTag(feed);
      if (view.watch) {
        const w = new WatchSupervisor(
          view.watch,
          {
            onReady: (file) => void this.#queue.push({ kind: 'file', file, origin: 'watch', ...tag(file) }),
            onSuperseded: (file) => void this.#archive(file, undefined, feed),
          },
          { dataset: this.name, logger: this.#log, health: this.#deps.health, clock: this.#deps.clock, ...(this.#keepsAll(feed) ? { keepAll: true } : {}) },
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
          this.#deps.cronStarter ?? nodeCronStarterWith(this.#log),
          (sched) => this.#log.warn(event('schedule.skipped', { schedule: sched.name, reason: 'still_running' }), 'schedule skipped: its last run has not ended'),
        );
        s.start();
        this.#schedulers.push({ s, abort });
      }
    }
  }

  /** Whether every file of `feed` counts (an update feed or change list: each says something the others may not) rather than only its newest. */
  #keepsAll(feed: string): boolean {
    return hasFeeds(this.#ds) && this.#ds.feeds[feed]?.role !== 'full';
  }

  /** What a file job of `feed` carries: the feed (none for the primary one) and its queue slot (one per file when every file counts). */
  #feedTag(feed: string): (file: ReadyFile) => { feed?: string; slot?: string } {
    if (feed === this.#ds.feed && !this.#keepsAll(feed)) return () => ({});
    const keepAll = this.#keepsAll(feed);
    return (file) => ({ ...(feed === this.#ds.feed ? {} : { feed }), slot: keepAll ? `${feed}\0${file.path}` : feed });
  }

  /** `run --once`: queue the newest export waiting in each feed's folder (the others are superseded, as at a start; every file of an update feed or change list). */
  async #takeWaiting(): Promise<void> {
    for (const feed of feedNames(this.#ds)) await this.#takeWaitingOf(feed);
  }

  async #takeWaitingOf(feed: string): Promise<void> {
    const ds = feedView(this.#ds, feed);
    if (!ds.watch) return;
    let files: ReadyFile[];
    try {
      files = await new FolderWatcher(ds.watch, { onReady: () => undefined, onSuperseded: () => undefined }, { logger: this.#log }).waiting();
    } catch (err) {
      const errno = (err as NodeJS.ErrnoException).code ?? 'WATCH_FAILED';
      this.#deps.health.set(this.name, 'watch', 'WATCH_FAILED', `cannot read ${ds.watch.path}: ${errno}`, this.#deps.clock.now());
      this.#log.error(event('watch.failed', { watch: ds.watch.path, code: 'WATCH_FAILED', errno }), 'cannot read the export folder');
      const hint = WATCH_HINTS[errno];
      // A folder that is missing or not ours is a setting to fix (run --once exits 78 for it); anything else may pass.
      this.#deps.onError?.(
        this.name,
        hint !== undefined
          ? new ConnectorError('WATCH_FOLDER_UNUSABLE', `cannot read the export folder ${ds.watch.path} (${errno}): ${hint}`, { action: 'stop', context: { dataset: this.name, file: ds.watch.path, setting: 'watch.path' } })
          : new ConnectorError('WATCH_FAILED', `cannot read the export folder ${ds.watch.path}: ${errno}`, { action: 'retry', context: { dataset: this.name, file: ds.watch.path } }),
      );
      return;
    }
    const tag = this.#feedTag(feed);
    if (this.#keepsAll(feed)) {
      for (const f of [...files].reverse()) this.#queue.push({ kind: 'file', file: f, origin: 'startup', ...tag(f) });
      return;
    }
    const [newest, ...older] = files;
    for (const f of older) await this.#archive(f, undefined, feed);
    if (newest) this.#queue.push({ kind: 'file', file: newest, origin: 'startup', ...tag(newest) });
  }

  async #stopTriggers(): Promise<void> {
    // A running export command is killed (its process group), not left behind.
    for (const x of this.#schedulers) x.abort.abort();
    for (const x of this.#schedulers) await x.s.stop();
    this.#schedulers = [];
    for (const w of this.#watches.values()) await w.close();
    this.#watches.clear();
    this.#deps.health.clear(this.name, 'watch');
  }

  #fire(feed: string, s: NamedSchedule, signal: AbortSignal): Promise<void> {
    const paused = this.#deps.state.feedPaused?.(this.name, feed) ?? null;
    if (paused) {
      // Issue 14 with feeds: a paused feed's schedules do nothing until resume --feed (the others go on).
      this.#log.info(event('schedule.skipped', { schedule: s.name, feed, reason: 'feed_paused', paused_since: new Date(paused.at).toISOString() }), 'schedule skipped: its feed is paused');
      return Promise.resolve();
    }
    this.#log.info(event('schedule.fired', { schedule: s.name, type: s.config.type, ...(feed === this.#ds.feed ? {} : { feed }) }), 'schedule fired');
    const tag = this.#feedTag(feed);
    return runSchedule(feedView(this.#ds, feed), s, {
      signal,
      push: (job) => this.#queue.push(job.kind === 'file' ? { ...job, ...tag(job.file) } : job),
      state: this.#deps.state,
      health: this.#deps.health,
      logger: this.#log,
      clock: this.#deps.clock,
      tmpDir: this.#deps.tmpDir,
    });
  }

  async #run(job: DatasetJob): Promise<void> {
    const ds = this.#ds;
    const { engine, health } = this.#deps;
    if (job.kind === 'resume' || job.kind === 'reconcile') {
      try {
        if (job.kind === 'reconcile') this.#log.info(event('reconcile.started'), 'reconcile started');
        if (job.kind === 'reconcile' && !engine.reconcile) {
          this.#log.warn(event('reconcile.done', { code: 'NOT_AVAILABLE' }), 'reconcile not available in this engine');
          return;
        }
        if (job.kind === 'reconcile') {
          // The engine logs reconcile.done with what the rebuild found; drift in our records has the export applied again.
          const view = await engine.reconcile!(ds, { signal: this.#stopping.signal });
          await repairDrift(ds, view.rebuilt, {
            state: this.#deps.state,
            logger: this.#log,
            health,
            clock: this.#deps.clock,
            push: (j) => this.#queue.push(j),
            // An export waiting for its retry is held by FileOrder, not the queue: it is newer than the archived one too.
            exportWaiting: () => this.#queue.fileWaiting || this.#order.hasPending(),
          });
        } else {
          const result = await engine.resume(ds, { signal: this.#stopping.signal });
          const outcome = (result as { result?: unknown } | undefined)?.result ?? null;
          this.#log.info(event('sync.resumed', { result: outcome }), 'journal resumed');
          // Issue 14: an interrupted plan of a paused dataset waits; the resume of the dataset continues it.
          if (outcome === 'paused') {
            this.#resumeJournal = true;
            this.#pollPause();
          }
        }
        health.clear(this.name, job.kind);
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        health.set(this.name, job.kind, typeof code === 'string' ? code : 'INTERNAL', `${job.kind} failed`, this.#deps.clock.now());
        this.#log.error(event('sync.failed', { task: job.kind, code, err }), `${job.kind} failed`);
      }
      return;
    }
    if (this.#park(job)) return;
    // Issue 13: a dataset of several feeds runs the files waiting for any of its feeds as one plan (a reapply: alone).
    if (hasFeeds(ds) && job.origin !== 'reapply' && this.#deps.engine.syncFeedFiles) return this.#runBatch(job);
    if (await this.#order.stale(job)) return;
    const next = await runFileJob(ds, job, this.#fileDeps());
    this.#order.accepted(job, next);
    // Stopping: an interrupted file stays in the folder and comes back at the next start (a reapply: stays pending).
    if (this.#stopping.signal.aborted) return;
    if (job.reapplyOf !== undefined && next.next !== 'retry') this.#deps.state.markReapply(this.name, job.reapplyOf, 'done');
    await this.#afterFiles(job, next);
  }

  #fileDeps(): FileJobDeps {
    return {
      ...this.#deps,
      signal: this.#stopping.signal,
      logger: this.#log,
      onSummary: (s) => this.noteSummary(s),
      onError: (err) => this.noteError(err),
    };
  }

  /** What follows every file job: drift health, the retry or back-off reset, pruning. */
  async #afterFiles(job: FileJob, next: FileJobResult): Promise<void> {
    // Another export processed: a drift not repaired again is no longer the last word.
    if (next.accepted) driftHealth(this.#ds, this.#deps);
    this.#order.ran(job, next);
    if (this.#deps.clock.now() - (this.#lastHistoryPruneAt ?? -Infinity) >= PRUNE_EVERY_MS) this.#pruneHistory();
    if (fromFolder(job) && this.#deps.clock.now() - (this.#lastPruneAt ?? -Infinity) >= PRUNE_EVERY_MS) await this.#prune();
  }

  /**
   * Issue 13's coalescing: `lead` with every file waiting for any feed of the
   * dataset (on the queue, or for its retry) runs as one plan. Of a full
   * feed's files only the newest counts (the older are superseded, as a
   * single export's are); every file of an update feed or change list counts,
   * applied oldest first. A paused feed's files are left waiting. Files that
   * must be tried again wait together with the newest of them.
   */
  async #runBatch(lead: FileJob): Promise<void> {
    // Files handed on in the same moment (a resume, a start-up scan) join this plan rather than wait for the next.
    await new Promise<void>((r) => setImmediate(r));
    const ds = this.#ds;
    const taken: FileJob[] = [lead];
    const add = (j: FileJob | undefined) => {
      if (!j || taken.includes(j)) return;
      taken.push(j);
    };
    for (const j of this.#queue.takeFiles()) add(j);
    add(this.#order.takePending());
    for (const j of [...taken]) {
      for (const c of this.#companions.get(j) ?? []) add(c);
      this.#companions.delete(j);
    }
    const jobs: FileJob[] = [];
    for (const j of taken) {
      if (j.origin === 'reapply') void this.#queue.push(j); // the last catalogue again after drift: on its own, next
      else if (j === lead || !this.#park(j)) jobs.push(j);
    }
    // Of each full feed only its newest file; an older one is superseded by it.
    const newestFull = new Map<string, FileJob>();
    for (const j of jobs) {
      const feed = j.feed ?? ds.feed;
      if (this.#keepsAll(feed)) continue;
      const had = newestFull.get(feed);
      if (!had || j.file.mtimeMs >= had.file.mtimeMs) newestFull.set(feed, j);
    }
    const kept: FileJob[] = [];
    for (const j of jobs) {
      const feed = j.feed ?? ds.feed;
      const newest = newestFull.get(feed);
      if (newest && newest !== j) {
        if (j.file.path !== newest.file.path) await this.#supersede(j, newest.file);
        continue;
      }
      if (!(await this.#order.stale(j))) kept.push(j);
    }
    if (kept.length === 0) return;
    kept.sort((a, b) => a.file.mtimeMs - b.file.mtimeMs);
    // In one plan the full feed's export is the base and the others apply onto it. A change list older than
    // that export must not outlive it (the export is the later word on which records exist): the files older
    // than the export go first as their own plan, the export and the rest next.
    const at = kept.findIndex((j) => !this.#keepsAll(j.feed ?? ds.feed));
    if (at > 0 && kept.slice(0, at).some((j) => ds.feeds[j.feed ?? ds.feed]?.role === 'changes')) {
      const later = kept.splice(at);
      this.#log.info(event('sync.coalesced', { split_at: later[0]!.file.path, reason: 'change_list_older_than_export', next: later.map((j) => j.file.path) }), 'a change list older than the export goes first, on its own');
      for (const j of later) void this.#queue.push(j);
    }
    const results = await runFileBatch(ds, kept.map((j) => ({ file: j.file, origin: j.origin, feed: j.feed ?? ds.feed })), this.#fileDeps());
    for (const [i, j] of kept.entries()) this.#order.accepted(j, results[i]!);
    if (this.#stopping.signal.aborted) return;
    // One retry for the files that must be tried again: the newest carries the others along (#companions).
    const again = kept.filter((_, i) => results[i]!.next === 'retry');
    const retryLead = again[again.length - 1];
    if (retryLead) this.#companions.set(retryLead, again.slice(0, -1));
    const anyAccepted = results.some((r) => r.accepted);
    const leadResult = retryLead ? results[kept.indexOf(retryLead)]! : { ...results[results.length - 1]!, accepted: anyAccepted };
    await this.#afterFiles(retryLead ?? kept[kept.length - 1]!, leadResult);
  }

  /**
   * Issue 14: a paused dataset takes no export. The file stays where it is
   * (not synced, not archived) and the state db is read every PAUSE_POLL_MS
   * until a resume, which queues the waiting exports again (the newest wins,
   * as at a start). True when the job was parked.
   */
  #park(job: Extract<DatasetJob, { kind: 'file' }>): boolean {
    // run --once parks nothing: the engine refuses the export (DATASET_PAUSED, exit 75) and it stays in the folder.
    if (this.#deps.once) return false;
    const feed = job.feed ?? this.#ds.feed;
    const paused = this.#deps.state.paused?.(this.name) ?? null;
    // Issue 14 with feeds: a paused feed's file waits the same way; the dataset's other feeds go on.
    const feedPaused = paused ? null : (this.#deps.state.feedPaused?.(this.name, feed) ?? null);
    const p = paused ?? feedPaused;
    if (!p) return false;
    this.#parked.push(job);
    const reason = paused ? 'paused' : 'feed_paused';
    this.#log.info(
      event('file.skipped', { file: job.file.path, origin: job.origin, ...(feedPaused ? { feed } : {}), reason, paused_since: new Date(p.at).toISOString(), waiting: this.#parked.length }),
      paused ? 'dataset paused: the export waits until resume' : `feed ${feed} paused: the export waits until resume --feed ${feed}`,
    );
    this.#pollPause();
    return true;
  }

  #pollPause(): void {
    if (this.#pausePoll || this.#stopping.signal.aborted) return;
    this.#pausePoll = this.#deps.clock.after(
      PAUSE_POLL_MS,
      () => {
        this.#pausePoll = undefined;
        if (this.#stopping.signal.aborted) return;
        if (this.#deps.state.paused?.(this.name)) return this.#pollPause();
        // The files of a feed still paused keep waiting; the rest (and an interrupted plan) go.
        const stillPaused = (j: FileJob) => this.#deps.state.feedPaused?.(this.name, j.feed ?? this.#ds.feed) != null;
        const jobs = this.#parked.filter((j) => !stillPaused(j));
        this.#parked = this.#parked.filter((j) => stillPaused(j));
        if (jobs.length > 0 || this.#resumeJournal) {
          const feeds = [...new Set(jobs.map((j) => j.feed ?? this.#ds.feed))];
          this.#log.info(event('dataset.resumed', { waiting: jobs.length, journal: this.#resumeJournal, feeds }), 'dataset resumed: waiting exports are taken');
        }
        if (this.#resumeJournal) this.#queue.push({ kind: 'resume' });
        this.#resumeJournal = false;
        for (const j of jobs) this.#queue.push(j);
        if (this.#parked.length > 0) this.#pollPause();
      },
      'pause',
    );
  }

  /** The daily prune of the history, whatever the dataset does (idle, paused). */
  #armHistoryPrune(): void {
    this.#historyTimer = this.#deps.clock.after(
      HISTORY_PRUNE_TIMER_MS,
      () => {
        this.#historyTimer = undefined;
        if (this.#stopping.signal.aborted) return;
        this.#pruneHistory();
        this.#armHistoryPrune();
      },
      'history-prune',
    );
  }

  /** Drop history older than the dataset's retention (issue 14). */
  #pruneHistory(): void {
    this.#lastHistoryPruneAt = this.#deps.clock.now();
    // Never throws (the engine logs a prune that failed).
    this.#deps.engine.pruneHistory?.(this.#ds);
  }

  /** Delete archived files older than watch.retention_days from each feed's processed/ and failed/. */
  async #prune(): Promise<void> {
    this.#lastPruneAt = this.#deps.clock.now();
    for (const feed of feedNames(this.#ds)) {
      const watch = feedView(this.#ds, feed).watch;
      if (watch) await pruneArchives(watch, this.#lastPruneAt, this.#log);
    }
  }

  /** A sync of this dataset threw (also one a shared export ran for it, fan-out.ts): health, and `run --once`'s exit. */
  noteError(err: unknown): void {
    this.#deps.onError?.(this.name, err);
    const code = (err as { code?: unknown }).code;
    this.#deps.health.set(this.name, 'sync', typeof code === 'string' ? code : 'INTERNAL', 'the last sync failed', this.#deps.clock.now());
  }

  /** A finished sync of this dataset (also one a shared export ran for it, fan-out.ts): metrics, health, `run --once`'s exit. */
  noteSummary(s: Parameters<NonNullable<FileJobDeps['onSummary']>>[0]): void {
    const { metrics, health, clock } = this.#deps;
    const now = () => clock.now();
    metrics.recordSync(s, now());
    this.#deps.onSummary?.(s);
    const heldOf = (d: string) => this.#deps.state.held(d);
    if (s.result === 'published' || s.result === 'unchanged') health.clear(this.name, 'sync');
    else if (s.result === 'held' || s.result === 'staged' || s.result === 'waiting') {
      // A change held in the state db is reported from there (topic 'held'), so that approve or discard from the CLI ends it.
      if (heldOf(this.name)) health.clear(this.name, 'sync');
      else health.set(this.name, 'sync', s.code ?? s.result.toUpperCase(), s.message ?? `change ${s.result}; a person must act`, now());
    } else health.set(this.name, 'sync', s.code ?? s.result.toUpperCase(), s.message ?? `the last sync ${s.result}`, now());
    syncHeldHealth(health, [this.name], heldOf);
  }

  async #supersede(job: FileJob, by?: ReadyFile): Promise<void> {
    this.#order.forget(job);
    // A reapply dropped for another export: that export goes instead, with the hash still forgotten.
    if (job.reapplyOf !== undefined) this.#deps.state.markReapply(this.name, job.reapplyOf, 'done');
    // Files that waited for their retry with this one are not superseded by it: they wait on the queue.
    for (const c of this.#companions.get(job) ?? []) void this.#queue.push(c);
    this.#companions.delete(job);
    await job.cleanup?.().catch(() => undefined);
    if (fromFolder(job)) await this.#archive(job.file, by, job.feed);
  }

  async #archive(file: ReadyFile, by?: ReadyFile, feed?: string): Promise<void> {
    const ds = feedView(this.#ds, feed ?? this.#ds.feed);
    if (!ds.watch) return;
    const opts = { now: this.#deps.clock.now(), timezone: this.#deps.timezone };
    const d = await disposeReported({ ...ds, watch: ds.watch }, file, 'superseded', opts, { ...this.#deps, logger: this.#log });
    if (d) this.#log.info(event('file.archived', { file: file.path, reason: 'superseded', by: by ? basename(by.path) : null, ...d }), 'file archived');
  }
}

function triggersOf(ds: DatasetConfig): unknown {
  const feeds = Object.entries(ds.feeds ?? {}).filter(([name]) => name !== ds.feed);
  return { watch: ds.watch ?? null, schedules: ds.schedules, feeds: Object.fromEntries(feeds.map(([name, f]) => [name, { watch: f.watch ?? null, schedules: f.schedules, role: f.role }])) };
}

/** The dataset's feeds, its primary first (a dataset built without feeds: its one). */
function feedNames(ds: DatasetConfig): string[] {
  return [ds.feed, ...Object.keys(ds.feeds ?? {}).filter((f) => f !== ds.feed)];
}
