import { hasCode } from '../../errors.js';
import type { ExecContext } from './context.js';
import { execute, type ExecEnd } from './execute.js';
import * as ledger from './ledger.js';
import type { DraftCounts, SyncPlan } from '../core/plan.js';
import { sameCounts } from './apply-per-record.js';
import type { RunJournal } from './run-journal.js';
import { ForeignDraftError, MixedDraftError, holdMixed, onlyOurs, sentCounts } from './drafts.js';
import { event } from '../../log/events.js';

/** Codes after which a plan is dropped and made again from a fresh read of the server. */
export const REPLAN_CODES = [
  'PRECONDITION_FAILED',
  'CONFLICT',
  'DRAFT_EXPIRED',
  'DRAFT_GONE',
  'DRAFT_MISMATCH',
  'RECORD_NOT_FOUND',
  'REPLAY_MISMATCH',
  'VERSION_NOT_FOUND',
  'IMPORT_NOT_EQUIVALENT',
  'FOREIGN_DRAFT_DISCARDED',
  // Issue 11: the key in use has not shown that it stages (replaced since the plan began): plan again, and keep it unsent.
  'KEY_NOT_SHOWN_STAGING',
  'KEY_CHANGED',
] as const;

/** True for a failure that means "the server moved on: re-read, re-diff, re-plan". */
export function needsReplan(err: unknown): boolean {
  return hasCode(err, ...REPLAN_CODES);
}

/** The draft version a plan's journal says it wrote to, if any. */
export function journaledDraft(rj: RunJournal): number | null {
  let v: number | null = null;
  for (const e of rj.all()) {
    if (e.draftVersion !== null && e.kind !== 'publish') v = e.draftVersion;
    const r = e.result as { version?: number; status?: string } | null;
    if (e.status === 'done' && r?.status === 'draft' && typeof r.version === 'number') v = r.version;
  }
  return v;
}

/**
 * Drop a plan that cannot finish as made (conflict, expiry, mismatch, lost
 * plan file): discard the draft it wrote, if it is still pending, and close
 * it as superseded (a new plan follows) or, given the sync's outcome `ended`,
 * as abandoned with that outcome. Nothing it staged is left behind; nothing was published.
 */
export async function abandonPlan(ctx: ExecContext, planId: string, why: string, ended?: ledger.Outcome): Promise<void> {
  const rj = ledger.stepsOf(ctx, planId);
  // Not readable now: the plan stays open (its draft still known as ours) for the next run.
  const pending = (await ctx.client.getDataset()).value.draft_version;
  let draft = journaledDraft(rj);
  let unanswered = false;
  if (draft === null && pending !== null && (await isUnansweredJobDraft(ctx, rj, planId, pending))) {
    draft = pending;
    unanswered = true;
  }
  if (draft !== null && pending === draft) {
    // Discard only a draft holding exactly what this plan sent; anyone else's change in it is left for a person.
    const counts = (await ctx.client.getVersion(draft)).value.counts;
    if (!unanswered && !onlyOurs(counts, rj)) throw new MixedDraftError(draft, planId, counts, sentCounts(rj));
    const step = `discard:${draft}`;
    if (!rj.get(step)) rj.intent(step, { kind: 'discard', draftVersion: draft });
    try {
      await ctx.client.discardVersion(draft);
    } catch (err) {
      if (!hasCode(err, 'DRAFT_EXPIRED', 'VERSION_NOT_FOUND', 'CONFLICT')) throw err;
    }
    rj.done(step);
    rj.committed('discard');
  }
  if (ended) ledger.abandoned(ctx, planId, ended);
  else ledger.supersede(ctx, planId);
  ctx.logger.warn(event('reconcile.drift', { kind: ended ? 'plan_abandoned' : 'plan_superseded', planId, draft: pending === draft ? draft : null, reason: why }), ended ? 'plan dropped' : 'plan dropped; planning again');
}

/**
 * A replace or upload whose answer never came (no job id journaled) may have
 * made the pending draft: it is this plan's when it is based on the plan's
 * base version and holds exactly the plan's counts.
 */
async function isUnansweredJobDraft(ctx: ExecContext, rj: RunJournal, planId: string, pending: number): Promise<boolean> {
  const step = rj.get('replace') ?? rj.get('import');
  if (!step || step.jobId !== null || step.status === 'failed') return false;
  const expected = (ledger.journaledPlan(ctx, planId)?.summary as { counts?: DraftCounts } | null)?.counts;
  const baseEtag = (step.intent as { baseEtag?: string | null } | null)?.baseEtag ?? null;
  if (!expected || baseEtag === null) return false;
  const d = (await ctx.client.getVersion(pending)).value;
  return d.status === 'draft' && `"v${d.base_version}"` === baseEtag && sameCounts(d.counts, expected);
}

/** A plan a resume took up: how it ended, and the plan itself when it ran (its counts are what it published). */
export interface ResumedPlan {
  planId: string;
  end: ExecEnd | 'superseded';
  plan?: SyncPlan;
}

/**
 * Continue the dataset's open plan after a crash: the same execute runs from
 * where the journal stands (known job polled, replace re-sent with the same
 * key and body, unknown writes re-read, own draft verified and published).
 * Returns null when there was nothing to resume.
 */
export async function resumeOpenPlan(ctx: ExecContext): Promise<ResumedPlan | null> {
  ledger.sweep(ctx);
  const open = ledger.openPlan(ctx);
  if (!open) return null;
  const run = ledger.load(ctx, open.planId);
  ctx.logger.info(event('sync.resumed', { planId: open.planId, path: open.path, planFile: run !== null }), 'resuming an interrupted sync');
  if (!run) {
    await abandonPlan(ctx, open.planId, 'plan file missing');
    return { planId: open.planId, end: 'superseded' };
  }
  const planId = run.plan.id;
  try {
    try {
      return { planId, end: await execute(ctx, run, ledger.stepsOf(ctx, planId)), plan: run.plan };
    } catch (err) {
      if (!needsReplan(err)) throw err;
      await abandonPlan(ctx, planId, (err as Error).message);
      return { planId, end: 'superseded' };
    }
  } catch (err) {
    // A draft not (only) ours: recorded for a person; the held gate reports it.
    if (err instanceof MixedDraftError) {
      const stop = holdMixed(ctx, err, run.plan.source?.fileHash ?? null);
      return { planId, end: { kind: 'held', held: 'foreign_draft', version: err.version, reason: stop.message, evaluation: null } };
    }
    if (err instanceof ForeignDraftError) {
      ledger.blocked(ctx, planId);
      return { planId, end: 'superseded' };
    }
    throw err;
  }
}
