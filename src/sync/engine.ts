import type { Logger } from 'pino';
import type { DatasetClient } from '../api/client.js';
import { systemClock, type Clock } from '../clock.js';
import type { DatasetConfig } from '../config/schema.js';
import { ConnectorError } from '../errors.js';
import type { StateDb } from '../snapshot/db.js';
import type { ExecContext } from './executor/context.js';
import { planDir } from './executor/plan-files.js';
import { DatasetLocks } from './lock.js';
import { DEFAULT_LOCK_SETTINGS, SharedLocks, type LockSettings } from './process-lock.js';
import { asConnectorError } from './executor/unexpected.js';
import { InterruptedError } from './executor/interrupt.js';
import { pruneJournal } from './executor/prune.js';
import { actionForResult, emptySummary, finalResult, logSummary, type SyncSummary } from './outcome.js';
import { approveHeld, discardHeld, type HeldActionResult } from './executor/approve.js';
import { policySchema, type Policy } from '../config/policy.js';
import type { LinkPolicy } from '../sources/open-file.js';
import { previewFrom, previewPlan, type PlanPreview } from './executor/preview.js';
import { heldPreview, type HeldPreview } from './executor/held-preview.js';
import { periodicReconcile } from './executor/periodic-reconcile.js';
import type { ServerView } from './executor/reconcile.js';
import { resumeOpenPlan } from './executor/resume.js';
import { reportResumed, runFrom, runSync, type Produced, type SyncOptions } from './executor/run-sync.js';
import type { SourceRead } from './executor/source-read.js';
import { writeServerRejects } from './executor/server-rows.js';
import { readShared, type SharedRead } from './executor/shared-read.js';
import { restoreSource } from './executor/restore-source.js';
import { openPlanWaits, stopIfFeedPaused, stopIfPaused } from './executor/paused.js';
import { FeedPauses } from '../snapshot/feed-pauses.js';
import { HistoryReader, type HistoryPoint } from '../history/reader.js';
import { pruneHistory, type PruneReport } from '../history/prune.js';
import { historyConfigSchema } from '../config/history.js';
import type { PauseState } from '../snapshot/dataset-state.js';
import { datasetStatus, type DatasetStatus } from './status.js';
import { event } from '../log/events.js';
import { feedView } from '../feeds/view.js';
import { runFeedBatch, type FeedFileInput } from './executor/feed-batch.js';
import type { FeedFileOutcome } from './outcome.js';

/** What the engine is built from; effects are passed in (house style). */
export interface SyncEngineDeps {
  db: StateDb;
  clientFor(ds: DatasetConfig): DatasetClient;
  logger: Logger;
  clock?: Clock;
  /** The per-dataset lock shared with other processes on the same state db (label: who this process is). */
  lock?: Partial<LockSettings>;
}

/** The input of one sync: an export file. */
export interface SyncInput {
  file: string;
  /** Whether `file` may be a symbolic link: never (default; a file found in a watch folder), within folders, or always (a path the operator named). */
  links?: LinkPolicy;
  /** The file's sha256 as the file job took it (one hash per file): the read must find the same bytes. */
  sha256?: string;
  /** The file read already for this dataset (readShared: a shared export read once for every dataset taking it). */
  read?: SourceRead | null;
}

export type { SyncOptions } from './executor/run-sync.js';
export { DatasetBusyError } from './process-lock.js';
export type { FeedFileInput } from './executor/feed-batch.js';
export { InterruptedError } from './executor/interrupt.js';

/**
 * The sync engine: read → reconcile → diff → plan → guards → execute →
 * confirm, one sync at a time per dataset (in this process and across every
 * process using the state db), every step journaled so a crash resumes where
 * it stopped.
 */
export class SyncEngine {
  readonly #locks = new DatasetLocks();
  readonly #shared: SharedLocks;
  readonly #clock: Clock;

  constructor(private readonly deps: SyncEngineDeps) {
    this.#clock = deps.clock ?? systemClock;
    this.#shared = new SharedLocks(deps.db.locks, { ...DEFAULT_LOCK_SETTINGS, ...deps.lock }, deps.logger, this.#clock);
  }

  /** True while a sync (or approve/discard) of the dataset runs or waits in this process. */
  busy(dataset: string): boolean {
    return this.#locks.busy(dataset);
  }

  /**
   * Make the published dataset equal to the export; returns (and logs) its
   * summary. Never throws: every failure (another process holding the
   * dataset, DATASET_BUSY, included) is in the summary with a code.
   */
  async sync(ds: DatasetConfig, input: SyncInput, opts: SyncOptions = {}): Promise<SyncSummary> {
    return this.#syncWith(ds, input.file, 'sync', opts, async (ctx) => {
      // Issue 14: the one place every export passes (sync, retry, the daemon's file jobs and re-applies, run --once).
      if (stopIfPaused(ctx, `nothing from ${input.file} was published (the export waits)`)) return;
      if (stopIfFeedPaused(ctx, [ds.feed], `nothing from ${input.file} was published (the export waits)`)) return;
      await runSync(ctx, ds, input.file, opts, input.links, input.sha256, input.read ?? undefined);
    });
  }

  /**
   * Run dataset `ds`'s feeds on these files (issue 13): the one entry point
   * for files of named feeds (the daemon's per-feed folders and schedules, a
   * fan-out of one folder to several datasets). One file is a sync of its
   * feed; several make one plan (feed-batch.ts: the full feed's export the
   * base, the others merged onto it in the order given, oldest first). The
   * summary's `files` says what became of each: planned (its fate is the
   * plan's result), rejected on its own, or not run (to be tried again).
   * Never throws.
   */
  async syncFeedFiles(ds: DatasetConfig, inputs: readonly FeedFileInput[], opts: SyncOptions = {}): Promise<SyncSummary> {
    if (inputs.length === 1) {
      const only = inputs[0]!;
      const summary = await this.sync(feedView(ds, only.feed), { file: only.file, ...(only.links ? { links: only.links } : {}), ...(only.sha256 ? { sha256: only.sha256 } : {}) }, opts);
      const outcome = summary.result === 'rejected' ? 'rejected' : 'planned';
      summary.files = [{ file: only.file, feed: only.feed, outcome, code: outcome === 'rejected' ? summary.code : null, message: outcome === 'rejected' ? summary.message : null, ...(summary.feed ? { matched: summary.feed } : {}) }];
      return summary;
    }
    const outcomes: FeedFileOutcome[] = inputs.map((i) => ({ file: i.file, feed: i.feed, outcome: 'not_run', code: null, message: null }));
    const summary = await this.#syncWith(ds, inputs.map((i) => i.file).join(' + '), 'sync', opts, async (ctx) => {
      ctx.summary.files = outcomes; // the same objects: the sync.summary line says what became of each file
      const what = 'nothing from these files was published (they wait)';
      if (stopIfPaused(ctx, what)) return;
      if (stopIfFeedPaused(ctx, [...new Set(inputs.map((i) => i.feed))], what)) return;
      await runFeedBatch(ctx, ds, inputs, opts, outcomes);
    });
    summary.files = outcomes;
    return summary;
  }

  /**
   * Read a shared export once for several datasets taking it (issue 13's fan-out), each seen through its taking
   * feed: one decode and parse, each dataset's rows, mapping and sort (shared-read.ts). Each read goes to that
   * dataset's `sync` (input.read); `dispose` once they are done. Takes no dataset's lock: it reads only the file.
   * Throws what a read throws beyond a refusal of the file (a refusal is in each read).
   */
  readShared(views: readonly DatasetConfig[], input: Omit<SyncInput, 'read'>): Promise<SharedRead> {
    return readShared(planDir(this.deps.db.path), views, input);
  }

  /**
   * Bring the published dataset back to a point of its history (issue 14):
   * the state there is worked out from the history and planned, staged,
   * guarded, journaled and published exactly as a sync of an export.
   */
  async restore(ds: DatasetConfig, point: HistoryPoint, opts: SyncOptions = {}): Promise<SyncSummary> {
    let label: string | null = null;
    const summary = await this.#syncWith(ds, null, 'restore', opts, async (ctx) => {
      await runFrom(ctx, ds, opts, async (dir) => {
        const target = this.#restoreTarget(ds, point, dir);
        label = target.src.file;
        ctx.summary.file = label;
        return target;
      });
    });
    if (label !== null) summary.file = label;
    // A restore is often run by hand with no daemon running: the history is pruned here too (the daemon prunes on its own).
    this.pruneHistory(ds);
    return summary;
  }

  /** What a restore would do (plan --restore), sending nothing but reads: the plan restore would run (make-plan.ts). */
  async planRestore(ds: DatasetConfig, point: HistoryPoint, opts: { publish?: boolean } = {}): Promise<PlanPreview> {
    return this.#run(ds, 'plan', undefined, () =>
      previewFrom(this.#ctx(ds, emptySummary(ds.name, null)), ds, async (dir) => this.#restoreTarget(ds, point, dir), { stageOnly: opts.publish === false }),
    );
  }

  /** The state at a history point as a source to plan from, with the point it is (issue 14). */
  #restoreTarget(ds: DatasetConfig, point: HistoryPoint, dir: string): Produced {
    const t = restoreSource(this.deps.db.conn, ds.name, point, policyOf(ds).ownership, dir);
    return { src: t.src, restore: { toSeq: t.point.seq, toVersion: t.point.version, at: t.point.at } };
  }

  /**
   * Drop history older than the dataset's retention (days, versions, size);
   * logs history.pruned when it removed anything. Never throws: a prune that
   * fails is logged, and the history only grows until the next one.
   */
  pruneHistory(ds: DatasetConfig): PruneReport | null {
    const log = this.deps.logger.child({ dataset: ds.name });
    try {
      const cfg = historyConfigSchema.parse((ds as { history?: unknown }).history ?? {});
      const r = pruneHistory(this.deps.db.conn, ds.name, cfg, this.#clock.now());
      if (r) {
        const oldest = new HistoryReader(this.deps.db.conn, ds.name).oldest();
        log.info(
          event('history.pruned', { ...r, oldest_version: oldest?.version ?? null, retention_days: cfg.retention_days, retention_versions: cfg.retention_versions, max_bytes: cfg.max_bytes }),
          'old history pruned',
        );
      }
      return r;
    } catch (err) {
      log.warn(event('history.pruned', { code: (err as { code?: unknown }).code ?? 'PRUNE_FAILED', err }), 'cannot prune the history');
      return null;
    }
  }

  /**
   * Stop taking exports for the dataset (files wait in the folder) until resumeExports; the daemon reads it from
   * the state db. With `feed`: that feed only (its files wait, the other feeds go on; `feed` must be one of the dataset's).
   */
  pause(ds: DatasetConfig, by: string, feed?: string): PauseState {
    if (feed !== undefined) return new FeedPauses(this.deps.db.conn, ds.name).pause(feedView(ds, feed).feed, { at: this.#clock.now(), by });
    return this.deps.db.snapshot(ds.name).pause({ at: this.#clock.now(), by });
  }

  /** Who works on the dataset right now (its lock held and its lease running), or null: a pause stops such a sync before it publishes. */
  workingNow(ds: DatasetConfig): { label: string; pid: number; purpose: string } | null {
    const row = this.deps.db.locks.get(ds.name);
    return row && row.expiresAt > this.#clock.now() ? { label: row.label, pid: row.pid, purpose: row.purpose } : null;
  }

  /** Take exports again (of `feed` only, when given); returns the pause it ended, or null when it was not paused. */
  resumeExports(ds: DatasetConfig, feed?: string): PauseState | null {
    if (feed !== undefined) {
      const pauses = new FeedPauses(this.deps.db.conn, ds.name);
      // A feed paused and then taken out of the config: its pause can still be cleared.
      if (!(feed in ds.feeds) && pauses.paused(feed)) return pauses.unpause(feed);
      return pauses.unpause(feedView(ds, feed).feed);
    }
    return this.deps.db.snapshot(ds.name).unpause();
  }

  /** One run of `body` under both locks, its summary filled and logged; never throws. */
  #syncWith(ds: DatasetConfig, file: string | null, purpose: string, opts: SyncOptions, body: (ctx: ExecContext) => Promise<void>): Promise<SyncSummary> {
    return this.#locks.run(ds.name, async () => {
      const summary = emptySummary(ds.name, file);
      const logger = this.deps.logger.child({ dataset: ds.name });
      const started = this.#clock.now();
      let client: DatasetClient | null = null;
      let before = { requests: 0, retries: 0 };
      try {
        await this.#shared.run(ds.name, purpose, opts.signal, async () => {
          const ctx = this.#ctx(ds, summary, opts.signal);
          client = ctx.client;
          before = ctx.client.stats;
          await body(ctx);
          pruneJournal(ctx);
        });
      } catch (err) {
        failedOutside(summary, logger, asConnectorError(err, ds.name, this.deps.db.path));
      } finally {
        const after = (client as DatasetClient | null)?.stats ?? before;
        summary.requests = after.requests - before.requests;
        summary.retries = after.retries - before.retries;
        summary.durationMs = this.#clock.now() - started;
        summary.result = finalResult(summary);
      }
      logSummary(logger, summary);
      return summary;
    });
  }

  /** Continue an interrupted sync from the journal (also done at the start of every sync); `signal` stops it between steps (result interrupted). */
  async resume(ds: DatasetConfig, opts: { signal?: AbortSignal } = {}): Promise<SyncSummary> {
    return this.#run(ds, 'resume', opts.signal, async () => {
      const ctx = this.#ctx(ds, emptySummary(ds.name, null), opts.signal);
      if (openPlanWaits(ctx)) return ctx.summary;
      let r;
      try {
        r = await resumeOpenPlan(ctx);
      } catch (err) {
        if (!(err instanceof InterruptedError)) throw err;
        Object.assign(ctx.summary, { result: 'interrupted', code: err.code, action: err.action, message: err.message });
        return ctx.summary;
      } finally {
        await writeServerRejects(ctx.refused, null);
      }
      reportResumed(ctx, r);
      const e = r?.end;
      ctx.summary.result =
        e === undefined || e === 'superseded' || e.kind === 'nothing' ? 'unchanged'
        : e.kind === 'published' ? 'published'
        : e.held === 'foreign_draft' ? 'waiting'
        : e.held === 'guard' ? 'held'
        : 'staged';
      ctx.summary.action = actionForResult(ctx.summary.result);
      return ctx.summary;
    });
  }

  /** Finish an interrupted sync and settle a held change, then rebuild the snapshot from every published record (the daemon's periodic reconcile). */
  async reconcile(ds: DatasetConfig, opts: { signal?: AbortSignal } = {}): Promise<ServerView> {
    return this.#run(ds, 'reconcile', opts.signal, async () => {
      const ctx = this.#ctx(ds, emptySummary(ds.name, null), opts.signal);
      try {
        return await periodicReconcile(ctx, () => openPlanWaits(ctx));
      } finally {
        await writeServerRejects(ctx.refused, null);
      }
    });
  }

  /** What a sync (with the same `publish` option) would do, sending nothing but reads. */
  async plan(ds: DatasetConfig, file: string, links?: LinkPolicy, opts: { publish?: boolean } = {}): Promise<PlanPreview> {
    // It may rebuild the snapshot from the server: a write, so under the lock too.
    return this.#run(ds, 'plan', undefined, () => previewPlan(this.#ctx(ds, emptySummary(ds.name, file)), ds, file, { stageOnly: opts.publish === false, ...(links ? { links } : {}) }));
  }

  /** Publish the held change with exactly the flags its guards need. */
  async approve(ds: DatasetConfig): Promise<HeldActionResult> {
    return this.#run(ds, 'approve', undefined, () => approveHeld(this.#ctx(ds, emptySummary(ds.name, null))));
  }

  /** What approve would publish (counts, guard, a few records), from the state db and plan file; no network, no lock. */
  heldPreview(ds: DatasetConfig): HeldPreview | null {
    return heldPreview(this.deps.db, ds.name);
  }

  /** Drop the held change (discard its draft). */
  async discard(ds: DatasetConfig): Promise<HeldActionResult> {
    return this.#run(ds, 'discard', undefined, () => discardHeld(this.#ctx(ds, emptySummary(ds.name, null))));
  }

  /** Last sync, snapshot size, held or staged drafts, open plan. No network. */
  status(ds: DatasetConfig): DatasetStatus {
    return datasetStatus(this.deps.db, ds.name, this.#clock.now());
  }

  /** Run `fn` holding the dataset's lock in this process, then across processes. */
  #run<T>(ds: DatasetConfig, purpose: string, signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
    return this.#locks.run(ds.name, () => this.#shared.run(ds.name, purpose, signal, fn));
  }

  #ctx(ds: DatasetConfig, summary: SyncSummary, signal?: AbortSignal): ExecContext {
    return {
      dataset: ds.name,
      db: this.deps.db,
      store: this.deps.db.snapshot(ds.name),
      client: this.deps.clientFor(ds),
      policy: policyOf(ds),
      logger: this.deps.logger.child({ dataset: ds.name }),
      clock: this.#clock,
      planDir: planDir(this.deps.db.path),
      summary,
      refused: [],
      ...(signal ? { signal } : {}),
    };
  }
}

/** A failure outside runSync (the lock, building the context): in the summary, never thrown. */
function failedOutside(summary: SyncSummary, logger: Logger, err: ConnectorError): void {
  summary.result = err instanceof InterruptedError ? 'interrupted' : err.action === 'stop' ? 'stopped' : err.action === 'reject' ? 'rejected' : err.action === 'hold' ? 'held' : 'failed';
  summary.code = err.code;
  summary.action = err.action;
  summary.message = err.message;
  logger.error(event(err.action === 'stop' ? 'dataset.stopped' : 'sync.failed', { code: err.code, action: err.action }), err.message);
}

/** The dataset's policy with defaults (config may hold it parsed already). */
function policyOf(ds: DatasetConfig): Policy {
  const parsed = policySchema.safeParse(ds.policy ?? {});
  if (!parsed.success) {
    throw new ConnectorError('CONFIG_INVALID', `dataset ${ds.name}: invalid policy`, { action: 'stop', context: { dataset: ds.name } });
  }
  return parsed.data;
}
