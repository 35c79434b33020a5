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
import { runFileJob, type FileJobDeps } from '../files/file-job.js';
import { DEFAULT_RETRY, FileOrder, fromFolder, type FileJob, type RetryDelays, type RetryNowReason } from './file-order.js';
import type { HealthState } from './health-state.js';
import type { DaemonEngine, DaemonState } from './ports.js';
import { syncHeldHealth } from './held-health.js';
import type { DaemonMetrics } from './metrics.js';
import { runSchedule } from './schedule-actions.js';
import { WatchSupervisor } from './watch-supervisor.js';

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
  #watch: WatchSupervisor | undefined;
  #scheduler: { s: DatasetScheduler; abort: AbortController } | undefined;
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
    this.#log.info(
      event('dataset.started', { watch: this.#watch?.dir ?? null, watching: this.#watch?.watching ?? null, schedules: this.#scheduler?.s.schedules.length ?? 0 }),
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
    } else await this.#watch?.restartIfFailed();
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

  async #startTriggers(): Promise<void> {
    const ds = this.#ds;
    if (ds.watch) {
      this.#watch = new WatchSupervisor(
        ds.watch,
        {
          onReady: (file) => void this.#queue.push({ kind: 'file', file, origin: 'watch' }),
          onSuperseded: (file) => void this.#archive(file),
        },
        { dataset: this.name, logger: this.#log, health: this.#deps.health, clock: this.#deps.clock },
      );
      await this.#watch.start();
    }
    if (ds.schedules.length > 0) {
      const abort = new AbortController();
      const s = new DatasetScheduler(
        nameSchedules(ds.schedules),
        this.#deps.timezone,
        (sched) => this.#fire(sched, abort.signal),
        this.#deps.cronStarter ?? nodeCronStarterWith(this.#log),
        (sched) => this.#log.warn(event('schedule.skipped', { schedule: sched.name, reason: 'still_running' }), 'schedule skipped: its last run has not ended'),
      );
      s.start();
      this.#scheduler = { s, abort };
    }
  }

  /** `run --once`: queue the newest export waiting in the folder (the others are superseded, as at a start). */
  async #takeWaiting(): Promise<void> {
    const ds = this.#ds;
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
    const [newest, ...older] = files;
    for (const f of older) await this.#archive(f);
    if (newest) this.#queue.push({ kind: 'file', file: newest, origin: 'startup' });
  }

  async #stopTriggers(): Promise<void> {
    // A running export command is killed (its process group), not left behind.
    this.#scheduler?.abort.abort();
    await this.#scheduler?.s.stop();
    this.#scheduler = undefined;
    await this.#watch?.close();
    this.#watch = undefined;
    this.#deps.health.clear(this.name, 'watch');
  }

  #fire(s: NamedSchedule, signal: AbortSignal): Promise<void> {
    this.#log.info(event('schedule.fired', { schedule: s.name, type: s.config.type }), 'schedule fired');
    return runSchedule(this.#ds, s, {
      signal,
      push: (job) => this.#queue.push(job),
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
    if (await this.#order.stale(job)) return;
    const next = await runFileJob(ds, job, {
      ...this.#deps,
      signal: this.#stopping.signal,
      logger: this.#log,
      onSummary: (s) => this.noteSummary(s),
      onError: (err) => this.noteError(err),
    });
    this.#order.accepted(job, next);
    // Stopping: an interrupted file stays in the folder and comes back at the next start (a reapply: stays pending).
    if (this.#stopping.signal.aborted) return;
    if (job.reapplyOf !== undefined && next.next !== 'retry') this.#deps.state.markReapply(this.name, job.reapplyOf, 'done');
    // Another export processed: a drift not repaired again is no longer the last word.
    if (next.accepted) driftHealth(ds, this.#deps);
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
    const paused = this.#deps.once ? null : (this.#deps.state.paused?.(this.name) ?? null);
    if (!paused) return false;
    this.#parked.push(job);
    this.#log.info(
      event('file.skipped', { file: job.file.path, origin: job.origin, reason: 'paused', paused_since: new Date(paused.at).toISOString(), waiting: this.#parked.length }),
      'dataset paused: the export waits until resume',
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
        const jobs = this.#parked.splice(0);
        this.#log.info(event('dataset.resumed', { waiting: jobs.length, journal: this.#resumeJournal }), 'dataset resumed: waiting exports are taken');
        if (this.#resumeJournal) this.#queue.push({ kind: 'resume' });
        this.#resumeJournal = false;
        for (const j of jobs) this.#queue.push(j);
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

  /** Delete archived files older than watch.retention_days from processed/ and failed/. */
  async #prune(): Promise<void> {
    if (!this.#ds.watch) return;
    this.#lastPruneAt = this.#deps.clock.now();
    await pruneArchives(this.#ds.watch, this.#lastPruneAt, this.#log);
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
    await job.cleanup?.().catch(() => undefined);
    if (fromFolder(job)) await this.#archive(job.file, by);
  }

  async #archive(file: ReadyFile, by?: ReadyFile): Promise<void> {
    const ds = this.#ds;
    if (!ds.watch) return;
    const opts = { now: this.#deps.clock.now(), timezone: this.#deps.timezone };
    const d = await disposeReported({ ...ds, watch: ds.watch }, file, 'superseded', opts, { ...this.#deps, logger: this.#log });
    if (d) this.#log.info(event('file.archived', { file: file.path, reason: 'superseded', by: by ? basename(by.path) : null, ...d }), 'file archived');
  }
}

function triggersOf(ds: DatasetConfig): unknown {
  return { watch: ds.watch ?? null, schedules: ds.schedules };
}
