import { ApiError } from '../../api/errors.js';
import type { DatasetConfig } from '../../config/schema.js';
import { ConnectorError, type ErrorAction } from '../../errors.js';
import { JobEndedError } from './apply-replace.js';
import type { ExecContext } from './context.js';
import { execute, logUnsent, unsentHold, type ExecEnd } from './execute.js';
import { LEGACY_KEY_WARNING, warnLegacyKey } from './legacy-key.js';
import * as ledger from './ledger.js';
import { heldGate } from './held-gate.js';
import { makePlan, type PlanChoices } from './make-plan.js';
import type { GateFile } from '../core/gate.js';
import { desiredOf, diffDesired, diffsAsRead, feedRead, feedRowVerdict, feedTotals, feedWarnings, gateFileOf, newChangesTally, NOT_OWNED_WARNING, planFeedOf, summaryOfTally, withFieldsChanged, type Desired } from './feed-desired.js';
import { hasFeeds, readerMapping } from '../../feeds/view.js';
import { FEED_STATE_FILE } from './feed-state-file.js';
import { linkOrCopy } from '../disk/sorted-source.js';
import { join } from 'node:path';
import type { PlanRestore, SyncPlan } from '../core/plan.js';
import { ImportNotEquivalentError } from './apply-import.js';
import { reconcile } from './reconcile.js';
import { abandonPlan, needsReplan, resumeOpenPlan, type ResumedPlan } from './resume.js';
import { ForeignDraftError, MixedDraftError, holdMixed, otherDraft } from './drafts.js';
import { asConnectorError } from './unexpected.js';
import { checkpoint, InterruptedError } from './interrupt.js';
import type { LinkPolicy } from '../../sources/open-file.js';
import { rejectFilePath } from '../../sources/reject-file.js';
import { readSource, withRejectFile, type SourceRead } from './source-read.js';
import { rowLinesOf, serverRowErrors, sourceLines, writeServerRejects } from './server-rows.js';
import { WorkDir } from './work-dir.js';
import { stopMessage } from './stop-messages.js';
import { actionForResult, type SyncResult, type SyncSummary } from '../outcome.js';
import type { FeedRole } from '../../config/feeds.js';
import { event } from '../../log/events.js';
import { keptChangeset, keptIneligible, readKept, stampConfirmed, type KeptRead } from '../unchanged/sync-kept.js';
import type { Changeset } from '../core/changeset.js';

/** Options of one sync. */
export interface SyncOptions {
  /** false: stage the change and leave it for a person (never publish). Default: the policy decides. */
  publish?: boolean;
  /** Abort to stop the sync between two journaled steps (never mid-request): result 'interrupted', the plan stays open for resume. */
  signal?: AbortSignal;
}

/** What a sync plans from: an export read, or a restore's target made from the history (issue 14) with the point it brings back. */
export interface Produced {
  src: SourceRead;
  restore?: PlanRestore;
  /** Several files of a dataset's feeds read as one (issue 13, feed-batch.ts): their merge stage, in place of desiredOf. */
  batch?: BatchMerge;
  /** Issue 18: the export read through the kept rows, and the full read to fall back on when its diff cannot be used. */
  kept?: { read: KeptRead; full(workDir: string): Promise<SourceRead> };
}

/** The merge stage of a plan several files make (feed-batch.ts). */
export interface BatchMerge {
  /** Which feed the held gate sees (the lead's). */
  gate: GateFile;
  /** Each file read for the plan, by its feed: what a sync stopped at the gate counts per feed. */
  read: ReadonlyArray<{ name: string; role: FeedRole; rows: number }>;
  /** The desired records of every file, merged onto the snapshot as reconciled, written into `dir`. */
  desired(dir: string): Desired & { batch: NonNullable<PlanChoices['batch']> };
  /** Keep what the ledger needs of the files beside the changeset (its folder, before the plan takes it). */
  keep(folder: string): void;
}

/** Row errors of a rejected file shown in its log line. */
const FIRST_ROW_ERRORS = 5;
/** Re-read, re-diff, re-plan at most this often per sync (CONFLICT, 412, expiry). */
const MAX_PLANS = 3;

/**
 * One sync of one dataset, filling ctx.summary; failures end up in the summary, not thrown. `read`: the file
 * read already for this dataset (a shared export read once for all its takers, shared-read.ts): used as its own
 * read would be, its reject file written now.
 */
export async function runSync(ctx: ExecContext, ds: DatasetConfig, file: string, opts: SyncOptions, links?: LinkPolicy, sha256?: string, read?: SourceRead): Promise<void> {
  return runFrom(ctx, ds, opts, async (dir) => {
    // A change list's upsert of a record that is not there is judged as it is read: every row error of the file is then in its reject file.
    const full = (d: string) => readSource(file, ds.source, readerMapping(ds, (id) => ctx.store.get(id) !== null), d, { links, valueFlags: diffsAsRead(ds), ...(sha256 ? { sha256 } : {}) });
    const off = keptIneligible(ctx, ds, read !== undefined);
    if (off === null) {
      const kept = await readKept(ctx, ds, file, dir, links, sha256);
      if (!('reason' in kept)) {
        ctx.summary.read = { path: kept.diff.path, reason: kept.diff.reason };
        return { src: kept.diff.read, kept: { read: kept, full } };
      }
      ctx.summary.read = { path: 'full', reason: kept.reason };
    } else ctx.summary.read = { path: 'full', reason: off };
    const src = read ? await withRejectFile(read) : await full(dir);
    return { src: feedRead(ds, src, ctx.clock.now()) };
  });
}

/** One sync from a source `produce` makes in the work folder: an export read, or a restore's target (issue 14). */
export async function runFrom(ctx: ExecContext, ds: DatasetConfig, opts: SyncOptions, produce: (workDir: string) => Promise<Produced>): Promise<void> {
  const s = ctx.summary;
  let src: SourceRead | null = null;
  // The export sorted on disk and each diff's changeset (issue 18); a plan's changeset moves beside its plan file.
  const work = WorkDir.open(ctx.planDir, ctx.dataset);
  try {
    const produced = await produce(work.dir);
    src = produced.src;
    const restore = produced.restore;
    const file = src.file;
    s.fileHash = src.fileHash;
    s.rows = src.rows;
    s.rowErrors = src.rowErrors.length;
    if (src.rejected) {
      // The first few row errors in the line itself, so the journal says what to fix; the reject file has them all.
      const first_row_errors = src.rowErrors.slice(0, FIRST_ROW_ERRORS).map((e) => ({ line: e.line, column: e.column, code: e.code, reason: e.reason }));
      ctx.logger.error(
        event('file.rejected', { file, code: src.rejected.code, rejectFile: src.rejectFile, row_errors: src.rowErrors.length, first_row_errors }),
        src.rejected.message,
      );
      Object.assign(s, { firstRowErrors: first_row_errors.map(({ line, column, code }) => ({ line, column, code })), rejectFile: src.rejectFile });
      if (!src.virtual) ledger.ended(ctx, 'rejected', { file, code: src.rejected.code, message: src.rejected.message, rejectFile: src.rejectFile });
      return end(ctx, 'rejected', src.rejected.code, src.rejected.message, src.rejected.action);
    }
    // A feed's rows that took none of the file's rows: the summary says why (the values the column held).
    if (src.rowsNote) ctx.summary.warnings.push(src.rowsNote);
    checkpoint(ctx);
    const resumed = await resumeOpenPlan(ctx);
    checkpoint(ctx);
    const batch = produced.batch;
    const gate = await heldGate(ctx, batch?.gate ?? gateFileOf(ds, src));
    if (gate) {
      Object.assign(s, gateStopFeeds(ds, src, batch));
      return end(ctx, gate.result, gate.code, gate.message);
    }

    let force = resumed?.end === 'superseded';
    // A new plan names the one it replaces (ledger.ts): the plan a resume dropped, or this sync's last.
    let supersedes = resumed?.end === 'superseded' ? resumed.planId : null;
    let importable = src.importability;
    const stageOnly = opts.publish === false;
    // Issue 18: stamped only from a plan of this read (null once the export was read again); never for a stage.
    let kept = stageOnly ? null : (produced.kept?.read ?? null);
    let partial = produced.kept?.read.diff.path === 'unchanged-rows';
    for (let attempt = 1; attempt <= MAX_PLANS; attempt++) {
      checkpoint(ctx);
      const view = await reconcile(ctx, force);
      const pre: Changeset | null = produced.kept && attempt === 1 ? keptChangeset(ctx, produced.kept.read) : null;
      if (pre === null && partial) {
        // The kept-rows read holds only the changed rows: diffing it again as the whole export would delete the rest.
        src = await produced.kept!.full(join(work.dir, 'full-again'));
        importable = src.importability;
        ctx.summary.read = { path: 'full', reason: 'the published records changed after the export was read; read again in full' };
        partial = false;
        kept = null;
      }
      // Issue 13's merge stage: the feed's rows with the snapshot as just reconciled, or the others' values.
      const desired: Desired & { batch?: PlanChoices['batch'] } = restore
        ? { sorted: src.sorted!, feed: null, unmatched: [], rowErrors: 0, stateFile: null }
        : batch
          ? batch.desired(work.changesetDir())
          : desiredOf(ctx, ds, src, work.changesetDir());
      fillFeed(ctx, desired, src);
      const badRows = feedRowVerdict(ds, src, desired);
      if (badRows) {
        // The reader's row errors and the change list's rows not applied; the reject file (written as this sync ends) has them all.
        const rows = [...src.rowErrors, ...desired.unmatched.filter((r) => r.code === 'INVALID_COMMAND' || r.code === 'INVALID_RECORD')].sort((a, b) => a.line - b.line);
        const firstRowErrors = rows.slice(0, FIRST_ROW_ERRORS).map(({ line, column, code }) => ({ line, column, code }));
        const rejectFile = src.virtual ? null : rejectFilePath(file);
        Object.assign(s, { firstRowErrors, rejectFile });
        ctx.logger.error(event('file.rejected', { file, code: badRows.code, rejectFile, row_errors: ctx.summary.rowErrors, first_row_errors: firstRowErrors }), badRows.message);
        // status shows the refusal as the last attempt, beside the last publish (the shop is stale until a good file).
        ledger.ended(ctx, 'rejected', { file, code: badRows.code, message: badRows.message, rejectFile });
        return end(ctx, 'rejected', badRows.code, badRows.message, badRows.action);
      }
      const diffGen = ctx.store.generation();
      const changeset = pre ?? (await diffDesired(ctx, desired, work.changesetDir()));
      const asDiffed = pre ? produced.kept!.read.diff.generation : ctx.store.generation() === diffGen ? diffGen : null;
      // Fields changed per feed: what the diff found, for every role (a full feed's merge cannot count them).
      if (desired.feed) Object.assign(ctx.summary, withFieldsChanged(ds, desired, changeset));
      // What the feed's state becomes goes with the plan (approve and crash resume publish it later).
      if (desired.stateFile && changeset.folder !== undefined) linkOrCopy(desired.stateFile, join(changeset.folder, FEED_STATE_FILE));
      if (batch && changeset.folder !== undefined) batch.keep(changeset.folder);
      let plan = makePlan(ctx, ds, src, changeset, view.dataset.active_version, { stageOnly, importable, supersedes, restore, merged: desired.feed, batch: desired.batch ?? null });
      fill(ctx, plan);
      for (const fe of changeset.foreignEdits.slice(0, 50)) {
        ctx.logger.warn(event('reconcile.drift', { kind: 'foreign_edit', record_id: fe.record_id, fields: fe.fields, resolution: fe.resolution }), 'foreign edit of an owned record');
      }
      // A feed's file says how it was merged (issue 13): by index (only the records it lists read) or by the whole snapshot.
      const merge = desired.feed && hasFeeds(ds) ? { merge: desired.listed ? 'indexed' : 'full' } : {};
      const readPath = ctx.summary.read ? { read: ctx.summary.read.path, ...(ctx.summary.read.reason ? { read_reason: ctx.summary.read.reason } : {}) } : {};
      ctx.logger.info(event('sync.planned', { planId: plan.id, path: plan.path, reason: ctx.summary.pathReason, ...merge, ...readPath, ...plan.counts }), 'sync planned');
      if (plan.path === 'none') {
        if (plan.blocked) return end(ctx, 'stopped', plan.blocked.code, plan.blocked.message);
        const source = plan.feed && plan.feed.role !== 'full' ? null : { fileHash: src.fileHash, rowCount: src.rows, at: ctx.clock.now() };
        ledger.unchanged(ctx, plan, changeset, source, view.dataset.active_version);
        if (kept) stampConfirmed(ctx, kept, plan.id, asDiffed);
        // Nothing left after the resumed plan (a restore or sync run again after a crash): its counts are this run's.
        if (reportResumed(ctx, resumed)) return end(ctx, 'published', null, null);
        return end(ctx, 'unchanged', null, null);
      }
      if (resumed?.plan && resumed.end !== 'superseded' && resumed.end.kind === 'published' && attempt === 1) {
        const c = resumed.plan.counts;
        ctx.summary.warnings.push(`first finished an interrupted sync (plan ${resumed.planId}: ${c.adds} added, ${c.changes} changed, ${c.deletes} deleted, version ${resumed.end.version})`);
      }
      if (plan.keyShown === 'publishes') warnLegacyKey(ctx, { planId: plan.id });
      checkpoint(ctx);
      const begin = (p: SyncPlan) => ledger.begin(ctx, p, changeset, { links: src!.links, ...(p.unsent ? { unsent: unsentHold({ plan: p }, null, p.keyWhy!) } : {}) });
      let run = await begin(plan);
      if (!run) {
        // The export changed since it was read: what would be uploaded is not what was diffed. A new plan, without the upload.
        importable = { importable: false, reason: 'the export changed after it was read' };
        ctx.logger.warn(event('sync.planned', { kind: 'import_fallback', planId: plan.id }), 'the export changed after it was read; sending the records instead of uploading it');
        // The first plan was never journaled nor saved: the new one supersedes nothing the journal knows.
        plan = makePlan(ctx, ds, src, changeset, view.dataset.active_version, { stageOnly, importable, supersedes: null, restore, merged: desired.feed, batch: desired.batch ?? null });
        fill(ctx, plan);
        run = (await begin(plan))!;
      }
      if (plan.unsent) {
        const h = unsentHold(run, null, plan.keyWhy!);
        logUnsent(ctx, run, null);
        return ended(ctx, { kind: 'held', held: h.kind, version: null, reason: h.reason, evaluation: null });
      }
      try {
        const done = await execute(ctx, run, ledger.stepsOf(ctx, plan.id));
        if (kept && done.kind === 'published') stampConfirmed(ctx, kept, plan.id);
        return ended(ctx, done);
      } catch (err) {
        supersedes = plan.id;
        if (err instanceof ApiError && err.code === 'DRAFT_PENDING' && attempt < MAX_PLANS) {
          // A11: a draft appeared under a replace or a publishing write; ours are settled, so it is foreign.
          await abandonPlan(ctx, plan.id, err.message);
          const pending = (await ctx.client.getDataset()).value.draft_version;
          const stop = pending === null ? null : await otherDraft(ctx, pending);
          if (stop) return end(ctx, stop.result, stop.code, stop.message);
          force = true;
          continue;
        }
        // A12: after the key published a write unasked, do not plan anew and send more within this sync.
        if (!needsReplan(err) || attempt === MAX_PLANS || ctx.summary.warnings.includes(LEGACY_KEY_WARNING)) throw err;
        if (err instanceof ImportNotEquivalentError) {
          importable = { importable: false, reason: err.message };
          ctx.summary.warnings.push(err.message);
          ctx.logger.warn(event('sync.planned', { kind: 'import_fallback', code: err.code, ...err.context }), 'the server read the file differently; planning again with PUT /records');
        } else {
          ctx.logger.warn(event('reconcile.drift', { kind: 'replan', code: (err as ConnectorError).code, attempt }), 'the server moved on; reading again and planning anew');
        }
        await abandonPlan(ctx, plan.id, (err as Error).message);
        force = true;
      }
    }
  } catch (err) {
    await failed(ctx, err, src);
  } finally {
    // A3: rows the server refused go to the reject file beside the export, after the reader's own.
    await writeServerRejects(ctx.refused, src);
    work.remove();
  }
}

/**
 * The summary of a run that finished a resumed plan and sent nothing of its
 * own reports that plan: its counts, path and version (never 0 counts for a
 * publish). True when the resumed plan published.
 */
export function reportResumed(ctx: ExecContext, resumed: ResumedPlan | null): boolean {
  if (!resumed?.plan || resumed.end === 'superseded' || resumed.end.kind !== 'published') return false;
  fill(ctx, resumed.plan);
  ctx.summary.version = resumed.end.version;
  return true;
}

/**
 * A sync stopped at the held gate (a held change of another feed, HELD_OTHER_FEED; a foreign draft) is a sync of
 * its files' feeds all the same: their figures with nothing merged (no row matched or not), so that /metrics counts
 * it per feed, under the sync's outcome (waiting), as it counts every other sync of a feed's file.
 */
function gateStopFeeds(ds: DatasetConfig, src: SourceRead, batch: BatchMerge | undefined): Pick<SyncSummary, 'feed' | 'feeds'> {
  const unmerged = (name: string, role: FeedRole) => summaryOfTally(name, role, newChangesTally(), 0);
  if (batch) {
    const feeds = feedTotals(batch.read.map((r) => ({ summary: unmerged(r.name, r.role), rows: r.rows })));
    return feeds[0] ? { feed: feeds[0], feeds } : {};
  }
  const feed = planFeedOf(ds, src);
  return feed ? { feed: unmerged(feed.name, feed.role) } : {};
}

/** The feed's counts in the summary; its unmatched rows go to the reject file (with the server's refusals, A3). */
function fillFeed(ctx: ExecContext, desired: Desired, read: SourceRead): void {
  if (!desired.feed) return;
  ctx.summary.feed = desired.feed;
  if (desired.feeds) ctx.summary.feeds = desired.feeds;
  const mine = new Set(['UNMATCHED_RECORD', 'RECORD_EXISTS', 'INVALID_COMMAND']);
  ctx.refused = [...ctx.refused.filter((r) => !mine.has(r.code)), ...desired.unmatched];
  // A change list's rows not applied (unknown command word) are row errors of the file, beside the reader's.
  ctx.summary.rowErrors = read.rowErrors.length + desired.rowErrors;
  // Once each, though the merge runs again for each plan a sync makes.
  for (const warning of desired.warnings ?? feedWarnings(read.file, desired.feed)) {
    if (ctx.summary.warnings.includes(warning)) continue;
    ctx.summary.warnings.push(warning);
    // Nothing changed and exit 0 would otherwise hide it: the log (and a terminal's progress lines) say it too.
    if (warning.includes(NOT_OWNED_WARNING)) ctx.logger.warn(event('feed.not_owned', { file: read.file, feed: desired.feed.name, not_owned: desired.feed.notOwned, first: desired.feed.firstNotOwned ?? [] }), warning);
  }
}

function fill(ctx: ExecContext, p: SyncPlan): void {
  const s = ctx.summary;
  s.adds = p.counts.adds;
  s.changes = p.counts.changes;
  s.deletes = p.counts.deletes;
  s.owned = p.counts.owned;
  s.notOwned = p.counts.notOwned;
  s.path = p.path === 'none' ? 'none' : p.path;
  s.pathReason = p.reason;
  s.guards = { held: p.held, reasons: p.guards.results.filter((r) => r.holds).map((r) => r.message) };
}

function ended(ctx: ExecContext, done: ExecEnd): void {
  if (done.kind === 'published') {
    ctx.summary.version = done.version;
    ctx.logger.info(event('sync.published', { version: done.version }), 'published');
    return end(ctx, 'published', null, null);
  }
  // The server refused every record: the input, not the moment, is wrong (exit 1, not 75).
  if (done.kind === 'nothing') return end(ctx, 'failed', 'ALL_REFUSED', `the server refused all ${done.refused} records`, 'reject');
  ctx.summary.version = done.version;
  const result = done.held === 'guard' ? 'held' : 'staged';
  return end(ctx, result, `HELD_${done.held.toUpperCase()}`, done.reason);
}

/** Set how the sync ended; the action is the failure's own when there is one, else what the result implies. */
function end(ctx: ExecContext, result: SyncResult, code: string | null, message: string | null, action: ErrorAction | null = actionForResult(result)): void {
  ctx.summary.result = result;
  ctx.summary.code = code;
  ctx.summary.action = action;
  ctx.summary.message = message;
}

/** Classify a failure by its action (house style 5): stop the dataset, reject the input, or fail for a later retry. */
async function failed(ctx: ExecContext, thrown: unknown, src: SourceRead | null): Promise<void> {
  // Never thrown on (engine.sync reports every failure): anything unexpected gets a code and an action too.
  const err = asConnectorError(thrown, ctx.dataset, ctx.db.path);
  if (err instanceof InterruptedError) {
    // Asked to stop between steps: the open plan (if any) stays for resume.
    ledger.ended(ctx, 'interrupted', { code: err.code });
    ctx.logger.warn(event('sync.failed', { kind: 'interrupted', code: err.code }), err.message);
    return end(ctx, 'interrupted', err.code, err.message, err.action);
  }
  if (err instanceof MixedDraftError) {
    const stop = holdMixed(ctx, err, src?.fileHash ?? null);
    return end(ctx, stop.result, stop.code, stop.message);
  }
  if (err instanceof ForeignDraftError) {
    // Nothing was sent: the plan is over; the draft is held as foreign (foreignDraft) and reported.
    ledger.blocked(ctx, ledger.openPlan(ctx)?.planId ?? null, { result: 'waiting', detail: { code: err.code, version: err.version } });
    return end(ctx, 'waiting', err.code, err.message, err.action);
  }
  if (err instanceof JobEndedError) {
    const rows = src ? serverRowErrors(src.file, sourceLines(src), err.job.errors, rowLinesOf(err)) : [];
    for (const r of rows.slice(0, 50)) ctx.logger.error(event('file.rejected', { kind: 'server_row_error', file: r.file, line: r.line, column: r.column, reason: r.reason }), 'server refused a row');
    ctx.refused.push(...rows);
    ctx.summary.rowErrors += rows.length;
    const result = err.job.status === 'FAILED' ? 'failed' : 'held';
    ledger.rejected(ctx, result, { code: err.code, message: err.message, job_id: err.job.job_id });
    ctx.logger.error(event('sync.failed', { kind: 'job', job_id: err.job.job_id, status: err.job.status, reason: err.job.reason, errors: err.job.errors.length }), err.message);
    return end(ctx, result, err.code, err.message, err.action);
  }
  if (err instanceof ApiError && err.status === 422 && err.rowErrors.length && src) {
    const rows = serverRowErrors(src.file, sourceLines(src), err.rowErrors, rowLinesOf(err));
    ctx.refused.push(...rows);
    ctx.summary.rowErrors += rows.length;
    ledger.rejected(ctx, 'rejected', { code: err.code, message: err.message });
    for (const r of rows.slice(0, 50)) ctx.logger.error(event('file.rejected', { kind: 'server_row_error', file: r.file, line: r.line, column: r.column, reason: r.reason }), 'server refused a row');
    return end(ctx, 'rejected', err.code, err.message, err.action);
  }
  // A refused or blocked request: the plan is over, and a draft it staged is discarded when only ours
  // (left for the next run when the server cannot be read now). A retry-class failure stays open for resume.
  const result = err.action === 'stop' ? 'stopped' : err.action === 'reject' ? 'rejected' : err.action === 'hold' ? 'held' : 'failed';
  const message = stopMessage(err);
  const outcome: ledger.Outcome = { result, detail: { code: err.code, message } };
  // Abandoned with the sync's outcome in one transaction; otherwise (no open plan, or it stays open) the outcome alone.
  if (!((err.action === 'reject' || err.action === 'hold') && (await abandonOpenPlan(ctx, err.message, outcome)))) ledger.ended(ctx, result, outcome.detail);
  ctx.logger.error(event(result === 'stopped' ? 'dataset.stopped' : 'sync.failed', { code: err.code, action: err.action }), message);
  return end(ctx, result, err.code, message, err.action);
}

/** True when the open plan was abandoned with `outcome` recorded. */
async function abandonOpenPlan(ctx: ExecContext, why: string, outcome: ledger.Outcome): Promise<boolean> {
  const open = ledger.openPlan(ctx);
  if (!open) return false;
  try {
    await abandonPlan(ctx, open.planId, why, outcome);
    return true;
  } catch (err) {
    if (err instanceof MixedDraftError) holdMixed(ctx, err, null);
    // Otherwise the plan stays open: the next run resumes or abandons it, its draft still known.
    return false;
  }
}
