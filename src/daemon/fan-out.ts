import { basename } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { takersOf, type ExportConfig } from '../config/exports.js';
import type { DatasetConfig } from '../config/schema.js';
import { feedView } from '../feeds/view.js';
import { disposeReported } from '../files/dispose-reported.js';
import { runFanOutJob, type TakerMarks, type TakerRun } from '../files/fan-out-job.js';
import type { Taker } from '../snapshot/export-takers.js';
import type { ReadyFile } from '../files/ready-file.js';
import { event } from '../log/events.js';
import { canonicalJson } from '../model/canonical.js';
import type { SyncSummary } from '../sync/outcome.js';
import { DatasetQueue, type DatasetJob } from '../triggers/queue.js';
import { DatasetScheduler, nameSchedules, nodeCronStarterWith, type CronStarter } from '../triggers/scheduler.js';
import { FolderWatcher } from '../triggers/watcher.js';
import { DEFAULT_RETRY, FileOrder, fromFolder, type FileJob, type RetryDelays } from './file-order.js';
import { PAUSE_POLL_MS } from './dataset-runtime.js';
import type { HealthState } from './health-state.js';
import type { DaemonEngine } from './ports.js';
import { keepsAll } from './feed-triggers.js';
import { runSchedule } from './schedule-actions.js';
import type { DaemonState } from './ports.js';
import { WatchSupervisor } from './watch-supervisor.js';

/** A served dataset as the fan-out sees it: its config, and where its sync results go (metrics, health). */
export interface ServedDataset {
  config: DatasetConfig;
  noteSummary(s: SyncSummary): void;
  noteError(err: unknown): void;
}

/** What the shared exports need of the daemon. */
export interface ExportDeps {
  engine: DaemonEngine;
  marks: TakerMarks;
  state: DaemonState;
  logger: Logger;
  health: HealthState;
  clock: Clock;
  timezone: string;
  tmpDir: string;
  /** The dataset served under a name now, if any (a dataset whose key cannot be read is not). */
  served(name: string): ServedDataset | undefined;
  cronStarter?: CronStarter;
  retry?: RetryDelays;
  /** `run --once`: take the newest file waiting in each export's folder (every one, oldest first, for an update or changes taker), start no watcher and no schedule. */
  once?: boolean;
}

/** The /healthz name of an export's reasons (its watch and schedules). */
export const exportHealthName = (name: string) => `export:${name}`;

/**
 * One shared export served by the daemon (issue 13's fan-out): ONE watcher
 * and ONE set of schedules, and a queue of its own (one file at a time, a
 * newer file replacing a waiting one only when every taker is a full feed,
 * else each taken oldest first; retries with back-off as a dataset's),
 * whose job hands each file to every feed taking it (runFanOutJob). The
 * datasets' own queues are not involved: the engine's per-dataset lock keeps
 * a taker's sync apart from the dataset's other work.
 */
export class ExportRuntime {
  #cfg: ExportConfig;
  #takers: Array<{ dataset: string; feed: string }>;
  readonly #deps: ExportDeps;
  readonly #log: Logger;
  readonly #queue: DatasetQueue;
  readonly #order: FileOrder;
  #watch: WatchSupervisor | undefined;
  #scheduler: { s: DatasetScheduler; abort: AbortController } | undefined;
  readonly #stopping = new AbortController();
  /** Files held behind an older one waiting for its retry (an update or changes taker must take each, oldest first). */
  #held: FileJob[] = [];
  /** While the kept file waits for a paused taker: the cancel of the next look at the state db for its resume. */
  #resumePoll: (() => void) | undefined;

  constructor(
    readonly name: string,
    cfg: ExportConfig,
    takers: Array<{ dataset: string; feed: string }>,
    deps: ExportDeps,
  ) {
    this.#cfg = cfg;
    this.#takers = takers;
    this.#deps = deps;
    this.#log = deps.logger.child({ export: name });
    this.#queue = new DatasetQueue({ run: (job) => this.#run(job), superseded: (job, by) => void this.#supersede(job, by) });
    this.#order = new FileOrder({
      logger: this.#log,
      clock: deps.clock,
      retry: deps.retry ?? DEFAULT_RETRY,
      push: (job) => void this.#queue.push(job),
      supersede: (job, by) => this.#supersede(job, by),
    });
  }

  get config(): ExportConfig {
    return this.#cfg;
  }

  /** Start the watcher and schedules (`run --once`: queue the newest file waiting). */
  async start(): Promise<void> {
    if (this.#deps.once) await this.#takeWaiting();
    else await this.#startTriggers();
    this.#log.info(event('dataset.started', { watch: this.#watch?.dir ?? null, schedules: this.#scheduler?.s.schedules.length ?? 0, takers: this.#takers }), 'export started');
  }

  /** A reload: triggers restart only when the export's watch or schedules changed; the takers are the new config's from the next file on. */
  async reconfigure(cfg: ExportConfig, takers: Array<{ dataset: string; feed: string }>): Promise<void> {
    const changed = canonicalJson({ w: cfg.watch ?? null, s: cfg.schedules }) !== canonicalJson({ w: this.#cfg.watch ?? null, s: this.#cfg.schedules });
    this.#cfg = cfg;
    this.#takers = takers;
    if (changed) {
      await this.#stopTriggers();
      await this.#startTriggers();
    } else await this.#watch?.restartIfFailed();
  }

  idle(): Promise<void> {
    return this.#queue.idle();
  }

  /** Enqueue a file by hand (tests). */
  push(job: DatasetJob): boolean {
    return this.#queue.push(job);
  }

  /** Stop the triggers and the running file at its next journaled step: the file stays, and the next start runs the takers not done. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    this.#order.cancel();
    this.#resumePoll?.();
    await this.#stopTriggers();
    const left = [...(await this.#queue.stop()), ...this.#held];
    this.#held = [];
    for (const job of left) if (job.kind === 'file') await job.cleanup?.().catch(() => undefined);
    this.#deps.health.removeDataset(exportHealthName(this.name));
  }

  /** The takers as the fan-out runs them: each dataset through its taking feed, or null when not served. */
  #takerRuns(): TakerRun[] {
    const count = new Map<string, number>();
    for (const t of this.#takers) count.set(t.dataset, (count.get(t.dataset) ?? 0) + 1);
    return this.#takers.map((t) => {
      const served = this.#deps.served(t.dataset);
      return { ...t, view: served ? feedView(served.config, t.feed) : null, tag: count.get(t.dataset)! > 1 ? `${t.dataset}-${t.feed}` : t.dataset };
    });
  }

  /**
   * Whether every file of the export counts: some taker's feed is an update feed or change list (each file
   * says something the others may not, and a change list applies in order), or a taker not served now (its
   * role unknown: kept safe). Only when every taker is a full feed does the newest file win.
   */
  #keepsAll(): boolean {
    return this.#takers.some((t) => {
      const served = this.#deps.served(t.dataset);
      return !served || keepsAll(served.config, t.feed);
    });
  }

  /** A queue slot per file when every file counts (none replaces another), else the export's one slot. */
  #slot(file: ReadyFile): { slot?: string } {
    return this.#keepsAll() ? { slot: file.path } : {};
  }

  async #run(job: DatasetJob): Promise<void> {
    if (job.kind !== 'file') return;
    if (this.#keepsAll() && this.#order.hasPending() && !this.#order.isPending(job) && job.origin !== 'reapply') {
      // An older file waits for a taker's retry: this one waits behind it rather than superseding it.
      this.#log.info(event('file.kept', { file: job.file.path, reason: 'older_file_retrying' }), 'file waits: an older file of the export is not taken by every dataset yet');
      this.#held.push(job);
      return;
    }
    if (await this.#order.stale(job)) return;
    const deps = this.#deps;
    const next = await runFanOutJob(this.name, this.#cfg, this.#takerRuns(), job, {
      engine: deps.engine,
      marks: deps.marks,
      logger: this.#log,
      health: deps.health,
      timezone: deps.timezone,
      clock: deps.clock,
      signal: this.#stopping.signal,
      onSummary: (dataset, s) => deps.served(dataset)?.noteSummary(s),
      onError: (dataset, err) => deps.served(dataset)?.noteError(err),
    });
    this.#order.accepted(job, next);
    if (this.#stopping.signal.aborted) return;
    this.#order.ran(job, next);
    if (next.next !== 'retry') this.#releaseHeld();
    else this.#pollResume(next.outcomes.filter((o) => o.outcome === 'retry' && o.result === 'paused'));
  }

  /** The kept file waits for paused takers: once none is paused any more, its retry runs at once (not after its back-off). */
  #pollResume(paused: readonly Taker[]): void {
    this.#resumePoll?.();
    this.#resumePoll = undefined;
    if (paused.length === 0 || this.#stopping.signal.aborted) return;
    const { state, clock } = this.#deps;
    this.#resumePoll = clock.after(
      PAUSE_POLL_MS,
      () => {
        this.#resumePoll = undefined;
        if (this.#stopping.signal.aborted || !this.#order.hasPending()) return;
        if (paused.some((t) => state.paused?.(t.dataset) || state.feedPaused?.(t.dataset, t.feed))) return this.#pollResume(paused);
        this.#order.retryNow('resumed', false);
      },
      'pause',
    );
  }

  /** The files held behind one that is now taken go back on the queue, oldest first. */
  #releaseHeld(): void {
    const held = this.#held.sort((a, b) => a.file.mtimeMs - b.file.mtimeMs);
    this.#held = [];
    for (const j of held) this.#queue.push(j);
  }

  async #startTriggers(): Promise<void> {
    const health = exportHealthName(this.name);
    if (this.#cfg.watch) {
      this.#watch = new WatchSupervisor(
        this.#cfg.watch,
        { onReady: (file) => void this.#queue.push({ kind: 'file', file, origin: 'watch', ...this.#slot(file) }), onSuperseded: (file) => void this.#archive(file) },
        { dataset: health, logger: this.#log, health: this.#deps.health, clock: this.#deps.clock, ...(this.#keepsAll() ? { keepAll: true } : {}) },
      );
      await this.#watch.start();
    }
    if (this.#cfg.schedules.length > 0) {
      const abort = new AbortController();
      const d = this.#deps;
      const s = new DatasetScheduler(
        nameSchedules(this.#cfg.schedules),
        d.timezone,
        (sched) => {
          this.#log.info(event('schedule.fired', { schedule: sched.name, type: sched.config.type }), 'schedule fired');
          return runSchedule({ name: health, source: this.#cfg.source }, sched, {
            signal: abort.signal,
            push: (job) => this.#queue.push(job),
            state: d.state,
            health: d.health,
            logger: this.#log,
            clock: d.clock,
            tmpDir: d.tmpDir,
          });
        },
        d.cronStarter ?? nodeCronStarterWith(this.#log),
        (sched) => this.#log.warn(event('schedule.skipped', { schedule: sched.name, reason: 'still_running' }), 'schedule skipped: its last run has not ended'),
      );
      s.start();
      this.#scheduler = { s, abort };
    }
  }

  async #stopTriggers(): Promise<void> {
    this.#scheduler?.abort.abort();
    await this.#scheduler?.s.stop();
    this.#scheduler = undefined;
    await this.#watch?.close();
    this.#watch = undefined;
  }

  async #takeWaiting(): Promise<void> {
    if (!this.#cfg.watch) return;
    const files = await new FolderWatcher(this.#cfg.watch, { onReady: () => undefined, onSuperseded: () => undefined }, { logger: this.#log }).waiting().catch((err: unknown) => {
      this.#log.error(event('watch.failed', { watch: this.#cfg.watch!.path, code: 'WATCH_FAILED', errno: (err as NodeJS.ErrnoException).code ?? null }), 'cannot read the export folder');
      return [] as ReadyFile[];
    });
    if (this.#keepsAll()) {
      for (const f of [...files].reverse()) this.#queue.push({ kind: 'file', file: f, origin: 'startup', slot: f.path });
      return;
    }
    const [newest, ...older] = files;
    for (const f of older) await this.#archive(f);
    if (newest) this.#queue.push({ kind: 'file', file: newest, origin: 'startup' });
  }

  async #supersede(job: FileJob, by?: ReadyFile): Promise<void> {
    this.#order.forget(job);
    await job.cleanup?.().catch(() => undefined);
    if (fromFolder(job)) await this.#archive(job.file, by);
  }

  /** A file a newer one replaced before any taker ran it: archived as superseded (the takers get the newer one). */
  async #archive(file: ReadyFile, by?: ReadyFile): Promise<void> {
    const watch = this.#cfg.watch;
    if (!watch) return;
    const d = await disposeReported({ name: exportHealthName(this.name), watch }, file, 'superseded', { now: this.#deps.clock.now(), timezone: this.#deps.timezone }, { ...this.#deps, logger: this.#log });
    if (d) this.#log.info(event('file.archived', { file: file.path, reason: 'superseded', by: by ? basename(by.path) : null, ...d }), 'file archived');
  }
}

/** The shared exports the daemon serves; `apply` brings them in line with a configuration, as DatasetSet does for datasets. */
export class ExportSet {
  readonly #runtimes = new Map<string, ExportRuntime>();

  constructor(private readonly deps: ExportDeps) {}

  get(name: string): ExportRuntime | undefined {
    return this.#runtimes.get(name);
  }

  names(): string[] {
    return [...this.#runtimes.keys()].sort();
  }

  /** Serve exactly the exports some served-or-configured feed takes. */
  async apply(exports: Record<string, ExportConfig>, datasets: Record<string, DatasetConfig>, timezone: string): Promise<void> {
    this.deps.timezone = timezone;
    const wanted = new Map(Object.entries(exports).map(([n, e]) => [n, { e, takers: takersOf(datasets, n) }] as const).filter(([, v]) => v.takers.length > 0));
    for (const [name, r] of [...this.#runtimes]) {
      if (wanted.has(name)) continue;
      this.#runtimes.delete(name);
      await r.stop();
    }
    for (const [name, { e, takers }] of wanted) {
      const running = this.#runtimes.get(name);
      if (running) {
        await running.reconfigure(e, takers);
        continue;
      }
      const r = new ExportRuntime(name, e, takers, this.deps);
      this.#runtimes.set(name, r);
      await r.start();
    }
  }

  async idle(): Promise<void> {
    await Promise.all([...this.#runtimes.values()].map((r) => r.idle()));
  }

  async stop(): Promise<void> {
    const all = [...this.#runtimes.values()];
    this.#runtimes.clear();
    await Promise.all(all.map((r) => r.stop()));
  }
}
