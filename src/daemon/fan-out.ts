import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { ExportConfig } from '../config/exports.js';
import type { DatasetConfig } from '../config/schema.js';
import { feedView } from '../feeds/view.js';
import { disposeReported, type StuckFiles } from '../files/dispose-reported.js';
import { archiveFanOutFile, tagOf, takeFanOutFile, takerName, takersText, type TakerMarks, type TakerOutcome, type TakerRun } from '../files/fan-out-job.js';
import { archivable, fileOrder, nextStep } from '../files/fan-out-plan.js';
import { TakerProgress } from '../files/taker-progress.js';
import type { Taker } from '../snapshot/export-takers.js';
import type { ReadyFile } from '../files/ready-file.js';
import { event } from '../log/events.js';
import { crashPoint } from '../sync/executor/crash-hook.js';
import { canonicalJson } from '../model/canonical.js';
import type { SyncSummary } from '../sync/outcome.js';
import { DatasetQueue, type DatasetJob } from '../triggers/queue.js';
import type { CronStarter } from '../triggers/scheduler.js';
import { DEFAULT_RETRY, type FileJob, type RetryDelays } from './file-order.js';
import type { HealthState } from './health-state.js';
import type { DaemonEngine, DaemonState } from './ports.js';
import { keepsAll } from './feed-triggers.js';
import { ExportTriggers, exportFilesWaiting } from './export-triggers.js';
import { keyOf, TakerKeeps } from './taker-keeps.js';
import { stuckFilesOf } from './waiting-files.js';

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
  readonly #triggers: ExportTriggers;
  readonly #stopping = new AbortController();
  /** The export's files not archived yet, by path. */
  readonly #files = new Map<string, FileJob>();
  /** Takers keeping a file, each with its own back-off. */
  readonly #kept: TakerKeeps;
  #progressCache: TakerProgress | undefined;
  /** Files already said to wait for a taker behind (file.kept older_file_retrying), by path. */
  readonly #saidWaiting = new Set<string>();
  /** The file every taker is done with that could not be archived: its next try, and the back-off (ms) of that try. */
  /** due: the retry's time came (its pass may try the move); before that a pass leaves the file for it. */
  #archiveRetry: { path: string; delay: number; cancel: () => void; due: boolean } | undefined;

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
    this.#kept = new TakerKeeps({ ...deps, logger: this.#log, stopping: this.#stopping.signal, again: (job) => void this.push(job) });
    this.#triggers = new ExportTriggers({
      ...deps,
      health: exportHealthName(name),
      healthState: deps.health,
      timezone: () => deps.timezone,
      logger: this.#log,
      push: (job) => this.push(job),
      archive: (file) => void this.#archive(file),
    });
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
    if (!this.#deps.once) await this.#triggers.start(this.#cfg);
    this.#log.info(event('dataset.started', { watch: this.#triggers.watchDir, schedules: this.#triggers.scheduleCount, takers: this.#takers }), 'export started');
  }

  /** A reload: triggers restart only when the export's watch or schedules changed; the takers are the new config's from the next pass on. */
  async reconfigure(cfg: ExportConfig, takers: Array<{ dataset: string; feed: string }>): Promise<void> {
    const changed = canonicalJson({ w: cfg.watch ?? null, s: cfg.schedules }) !== canonicalJson({ w: this.#cfg.watch ?? null, s: this.#cfg.schedules });
    this.#cfg = cfg;
    this.#takers = takers;
    if (changed) {
      await this.#triggers.stop();
      await this.#triggers.start(cfg);
    } else await this.#triggers.restartIfFailed();
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
    this.#kept.cancelAll();
    await this.#triggers.stop();
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
      const plan = [...byKey.values()].map((t) => ({ key: keyOf(t), full: !this.#keepsAll(t), blocked: this.#kept.has(t) }));
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
      else this.#kept.reset(t);
    }
  }

  /** The taker keeps the file (noted in its progress): its retry after its own back-off; paused, at its resume. */
  #keep(t: Taker, job: FileJob, o: TakerOutcome): void {
    this.#progress.note(t, job.file, 'kept', o.result, o.code, this.#deps.clock.now());
    this.#kept.keep(t, job, o);
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
    this.#stuck.moved(job.file.path);
    await job.cleanup?.().catch(() => undefined);
  }

  /** Archive, oldest first, the files every taker is done with: processed, failed/ when one refused it, superseded when every taker went on to a newer one. */
  async #archiveDone(takers: readonly TakerRun[]): Promise<void> {
    const ordered = fileOrder([...this.#files.values()].map((j) => j.file));
    const byKey = new Map(takers.map((t) => [keyOf(t), t] as const));
    for (const file of archivable(ordered, [...byKey.keys()], (k, f) => this.#done(byKey.get(k)!, f))) {
      const job = this.#files.get(file.path)!;
      // Failed to move earlier and its retry is not due: tried then, not again by this or another pass (the retry said when).
      if (this.#archiveRetry?.path === file.path && !this.#archiveRetry.due) return;
      const outcomes = takers.map((t): TakerOutcome => {
        const m = this.#deps.marks.fileMark(this.name, t, file)!;
        const outcome = m.outcome === 'superseded' ? 'skipped' : m.outcome === 'rejected' ? 'rejected' : 'done';
        return { dataset: t.dataset, feed: t.feed, outcome, result: m.result, code: m.code, ...(outcome === 'rejected' ? { message: m.message ?? null } : {}) };
      });
      const fate = outcomes.some((o) => o.outcome === 'rejected') ? 'failed' : outcomes.every((o) => o.result === 'superseded') ? 'superseded' : 'processed';
      const retryInMs = this.#nextArchiveDelay(file.path);
      const ok = fate === 'superseded' ? await this.#archive(file, undefined, retryInMs) : await archiveFanOutFile(this.#cfg, takers, job, fate, outcomes, { ...this.#deps, logger: this.#log, retryInMs, stuck: this.#stuck });
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
        this.#archiveRetry.due = true;
        this.#queue.push({ ...job, slot: job.file.path });
      },
      'archive-retry',
    );
    this.#archiveRetry = { path: job.file.path, delay, cancel, due: false };
  }

  /** A file every taker is done with that cannot be archived: `status` of each taking dataset names it (the folder is not emptied past it). */
  get #stuck(): StuckFiles {
    return stuckFilesOf(this.#deps.state, () => this.#takerRuns().map((t) => ({ dataset: t.dataset, feed: t.feed })), this.#deps.clock);
  }

  /** Say once per file the takers it waits for while they keep an older file (why the folder is not emptied). */
  #sayWaiting(takers: readonly TakerRun[]): void {
    for (const file of fileOrder([...this.#files.values()].map((j) => j.file))) {
      const behind = takers.filter((t) => this.#kept.has(t) && this.#kept.fileOf(t) !== file.path && !this.#done(t, file));
      if (behind.length === 0 || this.#saidWaiting.has(file.path)) continue;
      this.#saidWaiting.add(file.path);
      this.#log.info(
        event('file.kept', { file: file.path, reason: 'older_file_retrying', waiting: behind.map((t) => takerName(takers, t)), kept: behind.map((t) => this.#kept.fileOf(t)!) }),
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

  /** Queue the files waiting in the folder now, all known to the first pass (`watching`: the watcher says what it leaves). */
  async #takeWaiting(watching: boolean): Promise<void> {
    const files = await exportFilesWaiting(this.#cfg, { logger: this.#log, clock: this.#deps.clock }, watching);
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
    const d = await disposeReported({ name: exportHealthName(this.name), watch }, file, 'superseded', { now: this.#deps.clock.now(), timezone: this.#deps.timezone }, { ...this.#deps, logger: this.#log, stuck: this.#stuck, ...retry });
    if (d) this.#log.info(event('file.archived', { file: file.path, reason: 'superseded', by: by ? basename(by.path) : null, ...d }), 'file archived');
    return d !== null;
  }
}

/** The file is still there as it was handed on (not archived since, nor rewritten: a rewrite is handed on anew). */
async function sameFile(file: ReadyFile): Promise<boolean> {
  const st = await stat(file.path).catch(() => undefined);
  return st !== undefined && st.mtimeMs === file.mtimeMs;
}
