import { basename } from 'node:path';
import type { Logger } from 'pino';
import type { DatasetConfig } from '../config/schema.js';
import { canonicalJson } from '../model/canonical.js';
import { event } from '../log/events.js';
import { DatasetQueue, type DatasetJob } from '../triggers/queue.js';
import type { CronStarter } from '../triggers/scheduler.js';
import type { ReadyFile } from '../files/ready-file.js';
import type { SyncSummary } from '../sync/outcome.js';
import { disposeReported, type StuckFiles } from '../files/dispose-reported.js';
import { driftHealth, repairDrift, requeuePendingReapply } from './drift-repair.js';
import { pruneArchives } from '../files/prune.js';
import { runFileJob, type FileJobDeps, type FileJobResult } from '../files/file-job.js';
import { DEFAULT_RETRY, FileOrder, fromFolder, type FileJob, type RetryDelays, type RetryNowReason } from './file-order.js';
import type { HealthState } from './health-state.js';
import type { DaemonEngine, DaemonState } from './ports.js';
import { syncHeldHealth } from './held-health.js';
import type { DaemonMetrics } from './metrics.js';
import { feedView, hasFeeds } from '../feeds/view.js';
import { FeedTriggers, feedNames, triggersOf } from './feed-triggers.js';
import { BatchRunner } from './batch-runner.js';
import { CoalesceWindow } from './coalesce-window.js';
import { forgetGoneWaits, noteWaits, stuckFilesOf } from './waiting-files.js';

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
  /** Each feed's watch and schedules (issue 13). */
  readonly #triggers: FeedTriggers;
  readonly #batches: BatchRunner;
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
    this.#stuck = stuckFilesOf(deps.state, () => [{ dataset: this.name, feed: this.#ds.feed }], deps.clock);
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
      held: { now: () => this.#deps.state.held(this.name) !== null, everyMs: PAUSE_POLL_MS },
    });
    const window = new CoalesceWindow(deps.clock);
    this.#triggers = new FeedTriggers(ds, {
      ...deps,
      logger: this.#log,
      push: (job) => this.#queue.push(job),
      archive: (file, feed) => this.#archive(file, undefined, feed),
      onFolderChange: () => window.look(),
    });

    this.#batches = new BatchRunner({
      logger: this.#log,
      queue: this.#queue,
      order: this.#order,
      park: (job) => this.#park(job),
      supersede: (job, by) => this.#supersede(job, by),
      fileDeps: () => this.#fileDeps(),
      afterFiles: (job, next) => this.#afterFiles(job, next),
      stopping: this.#stopping.signal,
      clock: deps.clock,
      window,
      arriving: (feed) => this.#triggers.arrivingElsewhere(feed),
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
    await forgetGoneWaits(this.#deps.state, this.name);
    if (this.#deps.once) await this.#triggers.takeWaiting();
    else await this.#triggers.start();
    await this.#prune();
    this.#pruneHistory();
    if (!this.#deps.once) this.#armHistoryPrune();
    const primary = this.#triggers.primary;
    const feeds = this.#triggers.otherWatched;
    this.#log.info(
      event('dataset.started', {
        watch: primary?.dir ?? null,
        watching: primary?.watching ?? null,
        schedules: this.#triggers.scheduleCount,
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
    this.#triggers.config = ds;
    if (triggersChanged) {
      await this.#triggers.stop();
      await this.#triggers.start();
    } else await this.#triggers.restartIfFailed();
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
    await this.#triggers.stop();
    const left = await this.#queue.stop();
    for (const job of left) if (job.kind === 'file') await job.cleanup?.().catch(() => undefined);
    this.#deps.health.removeDataset(this.name);
    this.#deps.metrics.forget(this.name);
    this.#log.info(event('dataset.stopped', { dropped_jobs: left.length }), 'dataset stopped');
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
    if (hasFeeds(ds) && job.origin !== 'reapply' && this.#deps.engine.syncFeedFiles) return this.#batches.run(ds, job);
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
      // Its own files' waits for a person (a shared export's kept files are the fan-out's, export_files).
      onSummary: (s) => (noteWaits(this.#deps.state, this.name, s, this.#ds.feed, this.#deps.clock.now()), this.noteSummary(s)),
      onError: (err) => this.noteError(err),
      stuck: this.#stuck,
    };
  }

  /** Its own files that stay in their folder because they cannot be moved after their sync: `status` names them. */
  readonly #stuck: StuckFiles;

  /** What follows every file job: drift health, the retry or back-off reset, pruning. */
  async #afterFiles(job: FileJob, next: FileJobResult): Promise<void> {
    // Another export processed: a drift not repaired again is no longer the last word.
    if (next.accepted) driftHealth(this.#ds, this.#deps);
    this.#order.ran(job, next);
    if (this.#deps.clock.now() - (this.#lastHistoryPruneAt ?? -Infinity) >= PRUNE_EVERY_MS) this.#pruneHistory();
    if (fromFolder(job) && this.#deps.clock.now() - (this.#lastPruneAt ?? -Infinity) >= PRUNE_EVERY_MS) await this.#prune();
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
    this.#batches.release(job);
    this.#deps.state.waiting?.done(this.name, job.file.path);
    await job.cleanup?.().catch(() => undefined);
    if (fromFolder(job)) await this.#archive(job.file, by, job.feed);
  }

  async #archive(file: ReadyFile, by?: ReadyFile, feed?: string): Promise<void> {
    const ds = feedView(this.#ds, feed ?? this.#ds.feed);
    if (!ds.watch) return;
    const opts = { now: this.#deps.clock.now(), timezone: this.#deps.timezone };
    const d = await disposeReported({ ...ds, watch: ds.watch }, file, 'superseded', opts, { ...this.#deps, logger: this.#log, stuck: this.#stuck });
    if (d) this.#log.info(event('file.archived', { file: file.path, reason: 'superseded', by: by ? basename(by.path) : null, ...d }), 'file archived');
  }
}
