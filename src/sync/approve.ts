import { ConnectorError, hasCode } from '../errors.js';
import type { ExecContext } from './context.js';
import { loadPlan, removePlan } from './exec-plan.js';
import { draftGuards, finishPublished, publishDraft } from './publish.js';
import { RunJournal } from './run-journal.js';

/** What approve or discard did. */
export interface HeldActionResult {
  dataset: string;
  action: 'published' | 'discarded' | 'expired' | 'staged';
  version: number;
  flags?: { allow_mass_delete?: boolean; allow_empty?: boolean };
  message: string;
}

function heldOrThrow(ctx: ExecContext) {
  const held = ctx.store.held();
  if (!held || held.version === null || held.kind === 'foreign_draft') {
    throw new ConnectorError('NOTHING_HELD', `dataset ${ctx.dataset} has no held change of the connector's`, { action: 'reject', context: { dataset: ctx.dataset } });
  }
  return { ...held, version: held.version };
}

/**
 * A person approves the held change: publish its draft with the flags its
 * guards need (A5: allow_mass_delete when over half would go, allow_empty
 * when nothing is left) and nothing else; the snapshot advances on 200.
 */
export async function approveHeld(ctx: ExecContext): Promise<HeldActionResult> {
  const held = heldOrThrow(ctx);
  const plan = held.planId ? loadPlan(ctx.planDir, held.planId) : null;
  if (!plan) throw new ConnectorError('PLAN_FILE_MISSING', `the plan of held draft ${held.version} is gone; run discard, then sync`, { action: 'stop' });
  const detail = (await ctx.client.getVersion(held.version)).value;
  if (detail.status === 'active' || detail.status === 'superseded') {
    finishPublished(ctx, plan, null, held.version);
    return { dataset: ctx.dataset, action: 'published', version: held.version, message: 'already published' };
  }
  if (detail.status !== 'draft') {
    ctx.store.clearHeld();
    removePlan(ctx.planDir, plan.planId);
    return { dataset: ctx.dataset, action: 'expired', version: held.version, message: `draft ${held.version} is ${detail.status}; run sync again to stage it anew` };
  }
  const flags = draftGuards(ctx, plan, detail.counts).requiredFlags;
  const rj = new RunJournal(ctx.db.journal, plan.planId);
  try {
    const end = await publishDraft(ctx, plan, rj, held.version, flags, `approve:${held.since}`);
    if (end.kind === 'held') return { dataset: ctx.dataset, action: 'staged', version: held.version, message: end.reason };
  } catch (err) {
    if (hasCode(err, 'DRAFT_EXPIRED', 'CONFLICT')) {
      await ctx.client.discardVersion(held.version).catch(() => undefined);
      ctx.store.clearHeld();
      removePlan(ctx.planDir, plan.planId);
      return { dataset: ctx.dataset, action: 'expired', version: held.version, message: `${(err as ConnectorError).code}: run sync again to stage it anew` };
    }
    throw err;
  }
  ctx.logger.info({ event: 'draft.approved', version: held.version, flags }, 'held change approved and published');
  return { dataset: ctx.dataset, action: 'published', version: held.version, flags, message: `published version ${held.version}` };
}

/** A person drops the held change: discard its draft (the outcome records the export's hash). */
export async function discardHeld(ctx: ExecContext): Promise<HeldActionResult> {
  const held = heldOrThrow(ctx);
  try {
    await ctx.client.discardVersion(held.version);
  } catch (err) {
    if (!hasCode(err, 'DRAFT_EXPIRED', 'VERSION_NOT_FOUND', 'CONFLICT')) throw err;
  }
  const fileHash = (held.summary as { fileHash?: string | null } | null)?.fileHash ?? null;
  ctx.db.transaction(() => {
    ctx.store.clearHeld();
    ctx.store.recordOutcome('discarded', { version: held.version, fileHash });
  });
  if (held.planId) removePlan(ctx.planDir, held.planId);
  ctx.logger.info({ event: 'draft.discarded', version: held.version }, 'held change discarded');
  return { dataset: ctx.dataset, action: 'discarded', version: held.version, message: `discarded draft ${held.version}` };
}
