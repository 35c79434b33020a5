import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { takersOf, type ExportConfig } from '../config/exports.js';
import type { DatasetConfig } from '../config/schema.js';
import { feedView } from '../feeds/view.js';
import { disposeReported } from '../files/dispose-reported.js';
import { archiveFanOutFile, fanOutNext, tagOf, takeFanOutFile, takerName, takersText, type TakerMarks, type TakerOutcome, type TakerRun } from '../files/fan-out-job.js';
import { archivable, fileOrder, nextStep } from '../files/fan-out-plan.js';
import { TakerProgress } from '../files/taker-progress.js';
import type { Taker } from '../snapshot/export-takers.js';
import type { ReadyFile } from '../files/ready-file.js';
import { event } from '../log/events.js';
import { crashPoint } from '../sync/executor/crash-hook.js';
import { canonicalJson } from '../model/canonical.js';
import type { SyncSummary } from '../sync/outcome.js';
import { DatasetQueue, type DatasetJob } from '../triggers/queue.js';
import { DatasetScheduler, nameSchedules, nodeCronStarterWith, type CronStarter } from '../triggers/scheduler.js';
import { FolderWatcher } from '../triggers/watcher.js';
import { DEFAULT_RETRY, retryNowMessage, type FileJob, type RetryDelays, type RetryNowReason } from './file-order.js';
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

/** A taker's key in the runtime's maps. */
const keyOf = (t: Taker) => `${t.dataset}/${t.feed}`;

/** A taker keeping a file: its retry timer (and, paused, the look for its resume). */
interface Kept {
  file: string;
  cancel: () => void;
}

/**
 * One shared export served by the daemon (issue 13's fan-out): ONE watcher
 * and ONE set of schedules, and a queue of its own whose job hands the
 * export's files to the feeds taking it. Each taker goes through the files on
 * its own (takers' progress in export_files, fan-out-plan.ts): an update or
 * changes taker every file, oldest first, a full taker its newest; a taker
 * that keeps a file (paused, retrying with its own back-off) holds back only
 * itself; the takers at the same file take it together (read once). A file is
 * archived once every taker is done with it, in the files' order. The
 * datasets' own queues are not involved: the engine's per-dataset lock keeps
 * a taker's sync apart from the dataset's other work.
 */
export class ExportRuntime {
  #cfg: ExportConfig;
  #takers: Array<{ dataset: string; feed: string }>;
  readonly #deps: ExportDeps;
  readonly #log: Logger;
  readonly #queue: DatasetQueue;
  #watch: WatchSupervisor | undefined;
  #scheduler: { s: DatasetScheduler; abort: AbortController } | undefined;
  readonly #stopping = new AbortController();
  /** The export's files not archived yet, by path. */
  readonly #files = new Map<string, FileJob>();
  /** Takers keeping a file, by keyOf. */
  readonly #kept = new Map<string, Kept>();
  /** Each taker's back-off (ms) since its last file taken. */
  readonly #delays = new Map<string, number>();
  #progressCache: TakerProgress | undefined;
  /** Files already said to wait for a taker behind (file.kept older_file_retrying), by path. */
  readonly #saidWaiting = new Set<string>();
  /** The file every taker is done with that could not be archived: its next try, and the back-off (ms) of that try. */
  #archiveRetry: { path: string; delay: number; cancel: () => void } | undefined;

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
    this.#queue = new DatasetQueue({ run: (job) => this.#run(job), superseded: () => undefined });
  }

  get config(): ExportConfig {
    return this.#cfg;
  }

  /** Start the watcher and schedules (`run --once`: queue the files waiting). */
  async start(): Promise<void> {
    await this.#forgetGone();
    // Every file waiting at start is known to the first pass, as `run --once` knows them: the watcher hands them
    // on one by one as each settles, and a full taker given the oldest alone would publish it before the newest.
    await this.#takeWaiting(!this.#deps.once);
    if (!this.#deps.once) await this.#startTriggers();
    this.#log.info(event('dataset.started', { watch: this.#watch?.dir ?? null, schedules: this.#scheduler?.s.schedules.length ?? 0, takers: this.#takers }), 'export started');
  }

  /** A reload: triggers restart only when the export's watch or schedules changed; the takers are the new config's from the next pass on. */
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
    return this.#queue.push(job.kind === 'file' ? { ...job, slot: job.file.path } : job);
  }

  /** Stop the triggers and the running file at its next journaled step: the files stay, and the next start resumes each taker where it was. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    this.#archiveRetry?.cancel();
    for (const k of this.#kept.values()) k.cancel();
    this.#kept.clear();
    await this.#stopTriggers();
    const left = [...(await this.#queue.stop()), ...this.#files.values()];
    this.#files.clear();
    for (const job of left) if (job.kind === 'file') await job.cleanup?.().catch(() => undefined);
    this.#deps.health.removeDataset(exportHealthName(this.name));
  }

  /** The takers as the fan-out runs them: each dataset through its taking feed, or null when not served. */
  #takerRuns(): TakerRun[] {
    return this.#takers.map((t) => {
      const served = this.#deps.served(t.dataset);
      return { ...t, view: served ? feedView(served.config, t.feed) : null, tag: tagOf(this.#takers, t) };
    });
  }

  /** A taker goes through every file (update feed, change list, or not served now: its role unknown, kept safe); else only its newest. */
  #keepsAll(t: Taker): boolean {
    const served = this.#deps.served(t.dataset);
    return !served || keepsAll(served.config, t.feed);
  }

  /** The taker is done with the file (done, rejected, superseded): a kept file or one not taken yet is not. */
  #done(t: Taker, file: FileJob['file']): boolean {
    return this.#progress.done(t, file);
  }

  /** Each taker's progress, read from the state db once (after #forgetGone at start), then kept in step with it. */
  get #progress(): TakerProgress {
    return (this.#progressCache ??= new TakerProgress(this.#deps.marks, this.name));
  }

  async #run(job: DatasetJob): Promise<void> {
    if (job.kind !== 'file') return;
    // Files that arrived meanwhile join this pass (a full taker goes straight to its newest).
    for (const j of [job, ...this.#queue.takeFiles()]) {
      // The watcher hands on what it found at start after the first pass may have archived it (start() knew it).
      if (this.#files.get(j.file.path) === j || (await sameFile(j.file))) this.#add(j);
      else await j.cleanup?.().catch(() => undefined);
    }
    await this.#pass();
  }

  #add(job: FileJob): void {
    const known = this.#files.get(job.file.path);
    if (known === job) return;
    if (known && known.file.mtimeMs !== job.file.mtimeMs) {
      // Rewritten in place: a new file; the old one's progress goes.
      this.#progress.forget(known.file);
      void known.cleanup?.().catch(() => undefined);
    } else if (known) return;
    this.#files.set(job.file.path, job);
  }

  /** Hand out files until no free taker has one to take; then archive what every taker is done with. */
  async #pass(): Promise<void> {
    const deps = this.#deps;
    const byKey = new Map(this.#takerRuns().map((t) => [keyOf(t), t] as const));
    const done = (k: string, f: FileJob['file']) => this.#done(byKey.get(k)!, f);
    for (;;) {
      if (this.#stopping.signal.aborted) return;
      const ordered = fileOrder([...this.#files.values()].map((j) => j.file));
      const plan = [...byKey.values()].map((t) => ({ key: keyOf(t), full: !this.#keepsAll(t), blocked: this.#kept.has(keyOf(t)) }));
      const step = nextStep(ordered, plan, done);
      if (!step) break;
      for (const s of step.superseded) this.#supersedeFor(byKey.get(s.taker)!, s.file);
      if (step.take) await this.#take(this.#files.get(step.take.file.path)!, step.take.takers.map((k) => byKey.get(k)!));
      await this.#archiveDone([...byKey.values()]);
    }
    await this.#archiveDone([...byKey.values()]);
    this.#sayWaiting([...byKey.values()]);
  }

  /** One file for the takers at it: each outcome noted per file (runTakers); a taker to try again keeps it, with its own back-off. */
  async #take(job: FileJob, group: TakerRun[]): Promise<void> {
    const deps = this.#deps;
    const taken = await takeFanOutFile(this.name, this.#cfg, group, job, {
      engine: deps.engine,
      marks: deps.marks,
      logger: this.#log,
      health: deps.health,
      timezone: deps.timezone,
      clock: deps.clock,
      signal: this.#stopping.signal,
      progress: true,
      onSummary: (dataset, s) => deps.served(dataset)?.noteSummary(s),
      onError: (dataset, err) => deps.served(dataset)?.noteError(err),
    });
    if ('outcomes' in taken) this.#progress.refresh(job.file);
    if (this.#stopping.signal.aborted) return;
    if (!('outcomes' in taken)) {
      if (taken.next === 'dispose') return this.#drop(job);
      // Unreadable: every taker at it tries again.
      for (const t of group) this.#keep(t, job, { outcome: 'retry', result: 'failed', code: 'FILE_UNREADABLE', dataset: t.dataset, feed: t.feed });
      return;
    }
    const waiting = taken.outcomes.filter((o) => o.outcome === 'retry');
    if (waiting.length > 0) this.#log.warn(event('file.kept', { file: job.file.path, takers: takersText(this.#takers, taken.outcomes), waiting: waiting.map((o) => o.dataset) }), 'file kept: a dataset taking it must try it again (the others go on)');
    for (const o of taken.outcomes) {
      const t = group.find((g) => g.dataset === o.dataset && g.feed === o.feed)!;
      if (o.outcome === 'retry') this.#keep(t, job, o);
      else this.#delays.delete(keyOf(t));
    }
  }

  /** The taker keeps the file: its retry after its own back-off; paused, at its resume. */
  #keep(t: Taker, job: FileJob, o: TakerOutcome): void {
    const key = keyOf(t);
    const { clock, retry = DEFAULT_RETRY } = this.#deps;
    this.#progress.note(t, job.file, 'kept', o.result, o.code, clock.now());
    const next = fanOutNext([o]);
    const slow = next.next === 'retry' && next.slow;
    const prev = this.#delays.get(key) ?? 0;
    const delay = slow ? retry.slowMs : Math.min(retry.maxMs, prev === 0 ? retry.firstMs : prev * 2);
    this.#delays.set(key, delay);
    this.#kept.get(key)?.cancel();
    this.#log.info(event('sync.retry_scheduled', { file: job.file.path, dataset: t.dataset, feed: t.feed, retry_in_ms: delay, slow }), 'sync will be retried');
    const free = (reason?: RetryNowReason) => {
      if (this.#kept.get(key) !== kept || this.#stopping.signal.aborted) return;
      kept.cancel();
      this.#kept.delete(key);
      if (reason) this.#log.info(event('sync.retry_now', { file: job.file.path, dataset: t.dataset, feed: t.feed, reason, slow }), retryNowMessage(reason));
      this.#queue.push({ ...job, slot: job.file.path });
    };
    const { state } = this.#deps;
    // Paused, or waiting behind a change held for a person (HELD_OTHER_FEED): the state db is looked at until a
    // resume, approve or discard (the CLI, another process), and the file goes then, not after the back-off.
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

  /** A file a full taker skips for a newer one, or one older than a file the taker is done with: superseded for that taker only. */
  #supersedeFor(t: Taker, file: FileJob['file']): void {
    this.#log.info(event('file.skipped', { file: file.path, dataset: t.dataset, feed: t.feed, reason: 'superseded' }), 'file skipped for this dataset: it takes a newer file of the export');
    this.#progress.note(t, file, 'superseded', 'superseded', null, this.#deps.clock.now());
  }

  /** A file gone from the folder (or not a regular file any more): nothing to archive, its progress goes. */
  async #drop(job: FileJob): Promise<void> {
    this.#files.delete(job.file.path);
    this.#saidWaiting.delete(job.file.path);
    this.#progress.forget(job.file);
    await job.cleanup?.().catch(() => undefined);
  }

  /** Archive, oldest first, the files every taker is done with: processed, failed/ when one refused it, superseded when every taker went on to a newer one. */
  async #archiveDone(takers: readonly TakerRun[]): Promise<void> {
    const ordered = fileOrder([...this.#files.values()].map((j) => j.file));
    const byKey = new Map(takers.map((t) => [keyOf(t), t] as const));
    for (const file of archivable(ordered, [...byKey.keys()], (k, f) => this.#done(byKey.get(k)!, f))) {
      const job = this.#files.get(file.path)!;
      const outcomes = takers.map((t): TakerOutcome => {
        const m = this.#deps.marks.fileMark(this.name, t, file)!;
        const outcome = m.outcome === 'superseded' ? 'skipped' : m.outcome === 'rejected' ? 'rejected' : 'done';
        return { dataset: t.dataset, feed: t.feed, outcome, result: m.result, code: m.code, ...(outcome === 'rejected' ? { message: m.message ?? null } : {}) };
      });
      const fate = outcomes.some((o) => o.outcome === 'rejected') ? 'failed' : outcomes.every((o) => o.result === 'superseded') ? 'superseded' : 'processed';
      const retryInMs = this.#nextArchiveDelay(file.path);
      const ok = fate === 'superseded' ? await this.#archive(file, undefined, retryInMs) : await archiveFanOutFile(this.#cfg, takers, job, fate, outcomes, { ...this.#deps, logger: this.#log, retryInMs });
      // Could not be moved (said, with when it is tried again): it stays, and so do the newer ones, until that try.
      if (!ok) return this.#retryArchive(job, retryInMs);
      if (this.#archiveRetry?.path === file.path) {
        this.#archiveRetry.cancel();
        this.#archiveRetry = undefined;
      }
      crashPoint('fanout.archived');
      await this.#drop(job);
    }
  }

  /** The back-off of the next try to archive `path` should this one fail: doubling from the first retry delay, capped. */
  #nextArchiveDelay(path: string): number {
    const { firstMs, maxMs } = this.#deps.retry ?? DEFAULT_RETRY;
    const prev = this.#archiveRetry?.path === path ? this.#archiveRetry.delay : 0;
    return prev === 0 ? firstMs : Math.min(maxMs, prev * 2);
  }

  /**
   * A file every taker is done with could not be archived (a folder the service user may not write, a name in
   * the way): its move is tried again after `delay` through the queue, as a pass. Every taker is done with it
   * (export_files), so that pass only archives it: no taker syncs it again.
   */
  #retryArchive(job: FileJob, delay: number): void {
    this.#archiveRetry?.cancel();
    const cancel = this.#deps.clock.after(
      delay,
      () => {
        if (this.#archiveRetry?.cancel !== cancel || this.#stopping.signal.aborted) return;
        this.#queue.push({ ...job, slot: job.file.path });
      },
      'archive-retry',
    );
    this.#archiveRetry = { path: job.file.path, delay, cancel };
  }

  /** Say once per file the takers it waits for while they keep an older file (why the folder is not emptied). */
  #sayWaiting(takers: readonly TakerRun[]): void {
    for (const file of fileOrder([...this.#files.values()].map((j) => j.file))) {
      const behind = takers.filter((t) => this.#kept.has(keyOf(t)) && this.#kept.get(keyOf(t))!.file !== file.path && !this.#done(t, file));
      if (behind.length === 0 || this.#saidWaiting.has(file.path)) continue;
      this.#saidWaiting.add(file.path);
      this.#log.info(
        event('file.kept', { file: file.path, reason: 'older_file_retrying', waiting: behind.map((t) => takerName(takers, t)), kept: behind.map((t) => this.#kept.get(keyOf(t))!.file) }),
        'file waits in the folder for the datasets still taking an older file of the export (the others go on)',
      );
    }
  }

  /** Progress rows of files no longer in the folder (a crash between archiving a file and forgetting it). */
  async #forgetGone(): Promise<void> {
    for (const f of this.#deps.marks.files(this.name)) {
      const st = await stat(f.path).catch(() => undefined);
      if (!st || st.mtimeMs !== f.mtimeMs) this.#deps.marks.forgetFile(this.name, f);
    }
  }

  async #startTriggers(): Promise<void> {
    const health = exportHealthName(this.name);
    if (this.#cfg.watch) {
      this.#watch = new WatchSupervisor(
        this.#cfg.watch,
        { onReady: (file) => void this.#queue.push({ kind: 'file', file, origin: 'watch', slot: file.path }), onSuperseded: (file) => void this.#archive(file) },
        // Every file is reported: which one a taker skips is each taker's own (fan-out-plan.ts).
        { dataset: health, logger: this.#log, health: this.#deps.health, clock: this.#deps.clock, keepAll: true },
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
            push: (job) => this.#queue.push(job.kind === 'file' ? { ...job, slot: job.file.path } : job),
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

  /** Queue the files waiting in the folder now, all known to the first pass (`watching`: the watcher says what it leaves, a 0-byte file, a folder it cannot read). */
  async #takeWaiting(watching: boolean): Promise<void> {
    if (!this.#cfg.watch) return;
    const files = await new FolderWatcher(this.#cfg.watch, { onReady: () => undefined, onSuperseded: () => undefined }, { ...(watching ? {} : { logger: this.#log }), clock: this.#deps.clock }).waiting().catch((err: unknown) => {
      if (!watching) this.#log.error(event('watch.failed', { watch: this.#cfg.watch!.path, code: 'WATCH_FAILED', errno: (err as NodeJS.ErrnoException).code ?? null }), 'cannot read the export folder');
      return [] as ReadyFile[];
    });
    // All known to the first pass: a full taker goes straight to the newest.
    const jobs = files.map((f): FileJob => ({ kind: 'file', file: f, origin: 'startup', slot: f.path }));
    for (const j of jobs) this.#add(j);
    if (jobs[0]) this.#queue.push(jobs[0]);
  }

  /** A file every taker went past for a newer one: archived as superseded. */
  async #archive(file: ReadyFile, by?: ReadyFile, retryInMs?: number): Promise<boolean> {
    const watch = this.#cfg.watch;
    if (!watch) return true;
    const retry = retryInMs === undefined ? {} : { retryInMs };
    const d = await disposeReported({ name: exportHealthName(this.name), watch }, file, 'superseded', { now: this.#deps.clock.now(), timezone: this.#deps.timezone }, { ...this.#deps, logger: this.#log, ...retry });
    if (d) this.#log.info(event('file.archived', { file: file.path, reason: 'superseded', by: by ? basename(by.path) : null, ...d }), 'file archived');
    return d !== null;
  }
}

/** The file is still there as it was handed on (not archived since, nor rewritten: a rewrite is handed on anew). */
async function sameFile(file: ReadyFile): Promise<boolean> {
  const st = await stat(file.path).catch(() => undefined);
  return st !== undefined && st.mtimeMs === file.mtimeMs;
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
