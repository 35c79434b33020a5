import type { SourceIdentity } from '../../snapshot/types.js';
import type { HeldDraft } from '../../snapshot/types.js';
import type { LinkPolicy } from '../../sources/open-file.js';
import { rmSync } from 'node:fs';
import type { Changeset } from '../core/changeset.js';
import type { ExecContext } from './context.js';
import { crashPoint } from './crash-hook.js';
import { confirmedParts } from '../core/diff.js';
import type { GuardEvaluation } from '../core/guards.js';
import { copyPrivately, keepChangeset, listPlanIds, loadPlan, planOwner, removePlan, savePlan } from './plan-files.js';
import { runOf, type PlanRun } from './plan-run.js';
import type { SyncPlan } from '../core/plan.js';
import { RunJournal } from './run-journal.js';
import type { JournalPlan } from '../../snapshot/journal.js';
import type { SyncResult } from '../outcome.js';
import type { WriteResult } from '../../api/wire.js';
import type { PlanOperation } from '../core/plan.js';
import { learnFromWrite } from './key-knowledge.js';
import type { Provenance } from '../../snapshot/history-writer.js';
import { FeedState } from '../../feeds/state.js';
import { feedStateEntries } from './feed-state-file.js';
import { recordJson } from '../../model/record-json.js';

/**
 * The ledger: every transition of a plan's life, and nothing else writes the
 * journal's plans, the plan files or the snapshot's confirmation.
 *
 *   begun ─┬─ held | staged ─┬─ (approved ─ …) ─ published
 *          │                 └─ dropped (discarded, expired, replaced by a newer export)
 *          ├─ published
 *          ├─ refused (the server refused every record)
 *          ├─ rejected (row errors, a job that failed)
 *          ├─ blocked (a foreign draft) | mixed (a draft with someone else's change too)
 *          ├─ superseded (the server moved on, the upload was refused: a new plan names it)
 *          └─ abandoned (a refusal or hold ended the sync: no plan follows; the sync's outcome with it)
 *
 * Outside a plan's life, the ledger also records a foreign draft held
 * (foreignHeld), a held change forgotten (dropHeld), a sync with nothing to
 * send (unchanged) and a sync that ended with its plan left open (ended);
 * test/layout/ledger-writes.test.ts keeps every such write here.
 *
 * Each transition is ONE SQLite transaction holding the journal write, the
 * outcome, the held change and the snapshot's confirmation. Plan files are not
 * in SQLite, so they are ordered around that transaction such that a crash at
 * any point resumes correctly:
 * - begin writes the files first (changeset folder, upload copy, plan file,
 *   each fsynced), then the journal row: a crash before the row leaves files no
 *   plan owns, and the next run's sweep removes them (nothing was sent); after
 *   it, the plan is open and resumes from its file.
 * - an ending transition commits first and removes the files after: a crash in
 *   between leaves the files of a finished plan, which the sweep removes; never
 *   an open plan without its file.
 * - a held change keeps its files (approve and the held gate work from them)
 *   until it is published or dropped.
 */

export type { PlanTransition, PlanEnd } from '../../snapshot/journal.js';

/** What a sync that ended records as the dataset's last outcome (a person's discard too). */
export type RecordedOutcome = SyncResult | 'discarded';
export type Outcome = { result: RecordedOutcome; detail: Record<string, unknown> };

/** The journal of a plan's requests (steps), for execute and for judging whose a draft is. */
export function stepsOf(ctx: ExecContext, planId: string): RunJournal {
  return new RunJournal(ctx.db.journal, planId);
}

/** The dataset's open plan, if any (at most one). */
export function openPlan(ctx: Pick<ExecContext, 'db' | 'dataset'>): JournalPlan | null {
  return ctx.db.journal.openPlan(ctx.dataset);
}

/** The journal row of a plan (status, summary), if it was journaled. */
export function journaledPlan(ctx: ExecContext, planId: string): { status: 'open' | 'finished'; summary: unknown } | null {
  return ctx.db.journal.plan(planId);
}

/** The plan of this dataset whose journal says it staged into draft `version`, if any. */
export function planOfDraft(ctx: ExecContext, version: number): string | null {
  return ctx.db.journal.planOfDraft(ctx.dataset, version);
}

/** A saved plan as its journal stands now; null when its plan file or changeset is gone, or it sends nothing. */
export function load(ctx: ExecContext, planId: string): PlanRun | null {
  const saved = loadPlan(ctx.planDir, planId);
  if (!saved || saved.plan.path === 'none') return null;
  return runOf(saved.plan, saved.changeset, saved.legacy, stepsOf(ctx, planId));
}

/** The run again after steps were journaled (writes refused). */
export function refresh(run: PlanRun, rj: RunJournal): PlanRun {
  return runOf(run.plan, run.changeset, run.legacy, rj);
}

/** A change kept unsent at once (issue 11, A12): begun and held in the same transaction. */
export interface UnsentHold {
  kind: 'guard' | 'staged';
  reason: string;
}

/**
 * begun: the plan's files beside the state database, then its journal row.
 * An import plan's upload copy is made first: null when the export changed
 * since it was read (what would be uploaded is not what was diffed; the
 * caller plans again without the upload, superseding this plan).
 */
export async function begin(
  ctx: ExecContext,
  plan: SyncPlan,
  changeset: Changeset,
  opts: { links?: LinkPolicy; unsent?: UnsentHold } = {},
): Promise<PlanRun | null> {
  if (plan.upload) {
    // 0600 in a 0700 plan folder: the export is the shop's data. Hashed while copied, checked here once.
    if ((await copyPrivately(plan.file!, plan.upload.path, opts.links)) !== plan.upload.sha256) {
      rmSync(plan.upload.path, { force: true });
      return null;
    }
  }
  // The changeset goes beside the plan first: a plan file never names one a crash lost.
  const kept = keepChangeset(ctx.planDir, plan, changeset);
  savePlan(ctx.planDir, plan);
  const rj = ctx.db.transaction(() => {
    ctx.db.journal.beginPlan(ctx.dataset, {
      planId: plan.id,
      path: plan.path,
      summary: { file: plan.file, fileHash: plan.source?.fileHash ?? null, counts: plan.expected, supersedes: plan.supersedes },
    });
    const steps = stepsOf(ctx, plan.id);
    if (opts.unsent) holdIn(ctx, runOf(plan, kept, null, steps), opts.unsent.kind, null, opts.unsent.reason, null);
    return steps;
  });
  if (!opts.unsent) crashPoint('plan.begun');
  const run = runOf(plan, kept, null, rj);
  return plan.upload ? { ...run, uploadChecked: true } : run;
}

/**
 * approved: a person approved a change kept unsent; its plan opens again and
 * is sent under its own journal, `direct` as decided now with the key in use
 * (journaled with the approval: a resumed run sends the same way).
 */
export function approve(ctx: ExecContext, run: PlanRun, direct: boolean): PlanRun {
  const rj = ctx.db.transaction(() => {
    ctx.db.journal.reopenPlan(run.plan.id);
    const steps = stepsOf(ctx, run.plan.id);
    if (!steps.get('approve')) {
      steps.intent('approve', { kind: 'approve' });
      steps.done('approve', { direct });
    }
    return steps;
  });
  return refresh(run, rj);
}

/** held / staged: the change is kept (a draft, or unsent) for a person; the plan file stays for approve. */
export function held(ctx: ExecContext, run: PlanRun, kind: HeldDraft['kind'], version: number | null, reason: string, evaluation: GuardEvaluation | null): void {
  ctx.db.transaction(() => holdIn(ctx, run, kind, version, reason, evaluation));
}

function holdIn(ctx: ExecContext, run: PlanRun, kind: HeldDraft['kind'], version: number | null, reason: string, evaluation: GuardEvaluation | null): void {
  const plan = run.plan;
  ctx.store.hold({
    kind,
    version,
    reason,
    planId: plan.id,
    summary: {
      expected: run.expected,
      requiredFlags: evaluation?.requiredFlags ?? plan.requiredFlags,
      // A hold that sent nothing: the plan's own guards that hold it (a value guard with its samples, issue 14).
      guards: evaluation?.results ?? plan.guards.results.filter((r) => r.holds),
      file: plan.file,
      fileHash: plan.source?.fileHash ?? null,
      ...(plan.feed ? { feed: plan.feed.name } : {}),
    },
  });
  // The key has no publish role: the next plan says a person publishes (make-plan.ts), until a publish goes through.
  if (kind === 'publish_required') ctx.store.notePublish(ctx.client.keyId, true);
  ctx.store.recordOutcome(kind === 'guard' ? 'held' : 'staged', { version, reason });
  ctx.db.journal.finishPlan(plan.id, kind === 'guard' ? 'held' : 'staged');
}

/**
 * published: the one end of every plan the server published, whatever the
 * path (a draft published, direct writes, a legacy key's writes or job):
 * confirm its writes and its adoptions (issue 11: a first run owns every
 * overlapping record, so later deletions are planned and guarded), mark the
 * publish step done and close the plan, in one transaction. Writes already
 * confirmed one by one (direct) are confirmed again unchanged.
 */
export function published(ctx: ExecContext, run: PlanRun, rj: RunJournal | null, version: number, stepName = 'publish'): void {
  const plan = run.plan;
  let generation = 0;
  // Issue 18: the tallies counted while the server worked on this plan's replace, if they were counted to the end.
  const tallyAhead = ctx.tallyAhead?.planId === plan.id ? ctx.tallyAhead.take() : null;
  ctx.tallyAhead = undefined;
  ctx.db.transaction(() => {
    // An update feed's file is not the dataset's export: the last export (row-drop guard's base) stays the catalogue's.
    const source = plan.source && (!plan.feed || plan.feed.role === 'full') ? { source: plan.source } : {};
    ctx.store.confirm({ activeVersion: version, ...confirmedParts(run.changeset), ...source, provenance: provenanceOf(run), tallyAhead });
    // Issue 18: the records as this publish left them, read before any other writer can follow (kept rows' stamp).
    generation = ctx.store.generation();
    // Issue 13: the feed's values become its state only now, with the snapshot (never for a held or dropped change).
    feedStatePublished(ctx, plan, run.changeset.folder);
    if (rj?.get(stepName)?.status === 'intent') rj.done(stepName, { version });
    ctx.store.clearHeld();
    ctx.store.recordOutcome('published', { version, planId: plan.id });
    ctx.db.journal.finishPlan(plan.id, 'published');
  });
  ctx.confirmed = { planId: plan.id, generation };
  rj?.committed('publish');
  removePlan(ctx.planDir, plan.id);
}

/**
 * A feed's values as its state (issue 13), as its merge found them (kept in the plan's own changeset folder):
 * when its plan is published, or when its file changed nothing (a value that loses by precedence still is the
 * feed's, and its time counts for newest). A plan of several files: each file's, oldest first, as if each had
 * been published in turn (its merge saw the state the ones before it leave).
 */
function feedStatePublished(ctx: ExecContext, plan: SyncPlan, folder: string | undefined): void {
  if (folder === undefined) return;
  const state = new FeedState(ctx.db.conn, ctx.dataset);
  // A deactivating update feed's file says which records it holds hidden: those replace the ones it held.
  if (plan.batch) {
    for (const f of plan.batch) state.published({ feed: f.name, file: f.file, sha256: f.sha256, at: f.at }, feedStateEntries(folder, f, f.state), ctx.clock.now(), f.role === 'update');
  } else if (plan.feed) {
    state.published({ feed: plan.feed.name, file: plan.file, sha256: plan.source?.fileHash ?? null, at: plan.feed.at }, feedStateEntries(folder, plan.feed), ctx.clock.now(), plan.feed.role === 'update');
  }
}

/**
 * The history provenance of what a plan publishes (issue 14): its plan, export,
 * counts and the delete guard's ratio; a restore names the point it brings back.
 */
export function provenanceOf(run: PlanRun): Provenance {
  const plan = run.plan;
  const c = plan.counts;
  return {
    kind: plan.restore ? 'restore' : 'sync',
    planId: plan.id,
    file: plan.file,
    fileHash: plan.source?.fileHash ?? null,
    detail: {
      counts: run.expected,
      delete_ratio: c.deletable > 0 ? Math.round((c.deletes / c.deletable) * 10_000) / 10_000 : 0,
      deletable: c.deletable,
      approved: run.approved,
      held_by: plan.heldBy,
      ...(plan.restore ? { restore: plan.restore } : {}),
      ...(plan.feed ? { feed: plan.feed.name } : {}),
      ...(plan.batch ? { files: plan.batch.map((f) => ({ feed: f.name, file: f.file, sha256: f.sha256 })) } : {}),
    },
  };
}

/** A per-record write answered (journaled done): a direct one confirmed in the snapshot with it; a staged one teaches what the key does (A12). */
export function writeDone(
  ctx: ExecContext,
  run: PlanRun,
  rj: RunJournal,
  name: string,
  op: PlanOperation,
  res: { version: number; status: WriteResult['status']; etag: string | null; publish_denied?: boolean },
  staged: boolean,
): void {
  ctx.db.transaction(() => {
    if (res.status === 'published') {
      ctx.store.confirm({
        activeVersion: res.version,
        etag: res.etag,
        ...(op.op === 'delete' ? { deletes: [op.record_id] } : { upsertTexts: [withLine(run, { record_id: op.record.record_id, json: recordJson(op.record) })] }),
        provenance: provenanceOf(run),
      });
    }
    // A12: what the key did with publish=false, remembered in the same transaction as the write it learned from.
    if (staged) learnFromWrite(ctx, res.status);
    rj.done(name, { version: res.version, status: res.status, publish_denied: res.publish_denied ?? false });
  });
}

const writeLines = new WeakMap<PlanRun, Map<string, number>>();

/** A direct write's record with its export line, for `why` (issue 14): the run's lines are read once from its changeset. */
function withLine<T extends { record_id: string }>(run: PlanRun, text: T): T & { line?: number } {
  let lines = writeLines.get(run);
  if (!lines) {
    lines = new Map();
    for (const a of run.changeset.addTexts) if (a.line) lines.set(a.record_id, a.line);
    for (const c of run.changeset.changes) if (c.line) lines.set(c.record_id, c.line);
    writeLines.set(run, lines);
  }
  const line = lines.get(text.record_id);
  return line ? { ...text, line } : text;
}

/** refused: the server refused every record; nothing reached it. */
export function refusedAll(ctx: ExecContext, run: PlanRun, refused: number): void {
  ctx.db.transaction(() => {
    ctx.store.recordOutcome('failed', { planId: run.plan.id, refused });
    ctx.db.journal.finishPlan(run.plan.id, 'refused');
  });
  removePlan(ctx.planDir, run.plan.id);
}

/** superseded: the plan cannot finish as made (its draft, if any, already discarded by the caller); a new plan replaces it. */
export function supersede(ctx: ExecContext, planId: string): void {
  ctx.db.transaction(() => ctx.db.journal.finishPlan(planId, 'superseded'));
  removePlan(ctx.planDir, planId);
}

/** abandoned: a refusal or hold ended the sync and no plan follows: closed with the sync's outcome in one transaction. */
export function abandoned(ctx: ExecContext, planId: string, outcome: Outcome): void {
  ctx.db.transaction(() => {
    ctx.db.journal.finishPlan(planId, 'abandoned');
    ctx.store.recordOutcome(outcome.result, outcome.detail);
  });
  removePlan(ctx.planDir, planId);
}

/** blocked: nothing was sent, a foreign draft blocks the dataset (held as such by foreignHeld); with the sync's outcome when given. */
export function blocked(ctx: ExecContext, planId: string | null, outcome?: Outcome): void {
  ctx.db.transaction(() => {
    if (planId) ctx.db.journal.finishPlan(planId, 'blocked');
    if (outcome) ctx.store.recordOutcome(outcome.result, outcome.detail);
  });
  if (planId) removePlan(ctx.planDir, planId);
}

/**
 * mixed: a draft holds the plan's writes and someone else's change; recorded
 * as a foreign draft naming the plan, so a later publish of it in the portal
 * is confirmed as the connector's for those records.
 */
export function mixed(ctx: ExecContext, hold: { version: number; reason: string; planId: string; summary: unknown }, outcome: Record<string, unknown>): void {
  ctx.db.transaction(() => {
    ctx.store.hold({ kind: 'foreign_draft', version: hold.version, reason: hold.reason, planId: hold.planId, summary: hold.summary });
    ctx.store.recordOutcome('waiting', outcome);
    if (ctx.db.journal.plan(hold.planId)?.status === 'open') ctx.db.journal.finishPlan(hold.planId, 'mixed');
  });
}

/** A foreign draft blocks the dataset (on_foreign_draft: wait): held as such, with no plan of ours, until it is published or discarded. */
export function foreignHeld(ctx: ExecContext, version: number, reason: string): void {
  ctx.db.transaction(() => ctx.store.hold({ kind: 'foreign_draft', version, reason, planId: null, summary: null }));
}

/**
 * A sync that ends with no transition of a plan (interrupted, or failed with
 * the open plan, if any, kept for resume): only its outcome is recorded.
 */
export function ended(ctx: ExecContext, outcome: RecordedOutcome, detail: Record<string, unknown>): void {
  ctx.db.transaction(() => ctx.store.recordOutcome(outcome, detail));
}

/** rejected: the server refused the change (row errors, a job that failed or was stopped): the open plan, if any, ends with the sync's outcome. */
export function rejected(ctx: ExecContext, outcome: RecordedOutcome, detail: Record<string, unknown>): void {
  ctx.db.transaction(() => {
    const open = ctx.db.journal.openPlan(ctx.dataset);
    if (open) ctx.db.journal.finishPlan(open.planId, 'rejected');
    ctx.store.recordOutcome(outcome, detail);
  });
}

/** dropped: a held change is gone (expired, discarded in the portal, replaced by a newer export): forgotten with its files. */
export function dropHeld(ctx: ExecContext, planId: string | null, outcome?: Outcome): void {
  ctx.db.transaction(() => {
    ctx.store.clearHeld();
    if (outcome) ctx.store.recordOutcome(outcome.result, outcome.detail);
  });
  if (planId) removePlan(ctx.planDir, planId);
}

/** A sync with nothing to send: adoptions, the source (not an update feed's file, issue 13) and a feed's state confirmed, the outcome recorded (no plan is run). */
export function unchanged(ctx: ExecContext, plan: SyncPlan, changeset: Changeset, source: SourceIdentity | null, version: number): void {
  let generation = 0;
  ctx.db.transaction(() => {
    if (changeset.counts.adopted) ctx.store.adopt(changeset.adopted);
    if (source) ctx.store.recordSource(source);
    feedStatePublished(ctx, plan, changeset.folder);
    ctx.store.recordOutcome('unchanged', { version });
    generation = ctx.store.generation();
  });
  ctx.confirmed = { planId: plan.id, generation };
}

/**
 * Remove the plan files of this dataset's finished plans that no held draft
 * needs, and of plans a crash left unjournaled: a crash between the commit
 * that finished a plan and the removal of its file, or between writing a plan
 * and journaling it, would otherwise leave it behind for good.
 */
export function sweep(ctx: ExecContext): void {
  const heldPlan = ctx.store.held()?.planId ?? null;
  for (const planId of listPlanIds(ctx.planDir)) {
    const p = ctx.db.journal.plan(planId);
    if (p && p.dataset === ctx.dataset && p.status === 'finished' && planId !== heldPlan) removePlan(ctx.planDir, planId);
    // A crash between writing a plan's changeset (or plan file) and journaling it: nothing was sent, nothing needs it.
    // Under the dataset's lock no sync of it is between those steps now.
    else if (!p && planId !== heldPlan && planOwner(ctx.planDir, planId) === ctx.dataset) removePlan(ctx.planDir, planId);
  }
}

/** Delete the dataset's plans finished before `before` (ms) with their steps and files, except a held change's; returns their ids. */
export function prune(ctx: ExecContext, before: number): string[] {
  const held = ctx.store.held()?.planId ?? null;
  const ids = ctx.db.journal.prune(before, { dataset: ctx.dataset, keep: held ? [held] : [] });
  for (const id of ids) removePlan(ctx.planDir, id);
  return ids;
}
