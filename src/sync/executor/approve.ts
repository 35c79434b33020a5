import { ConnectorError, hasCode } from '../../errors.js';
import type { ExecContext } from './context.js';
import { execute } from './execute.js';
import * as ledger from './ledger.js';
import type { PlanRun } from './plan-run.js';
import { draftGuards, publishDraft } from './publish.js';
import { abandonPlan, needsReplan } from './resume.js';
import { stagingOf } from './key-knowledge.js';
import { event } from '../../log/events.js';

/** What approve or discard did. */
export interface HeldActionResult {
  dataset: string;
  action: 'published' | 'discarded' | 'expired' | 'staged';
  /** The draft version acted on; null for a change that was kept unsent (A12). */
  version: number | null;
  flags?: { allow_mass_delete?: boolean; allow_empty?: boolean };
  /** Why it was not published or discarded (DRAFT_EXPIRED, HELD_PUBLISH_REQUIRED…); absent when it was. */
  code?: string;
  message: string;
}

function heldOrThrow(ctx: ExecContext) {
  const held = ctx.store.held();
  if (!held || held.kind === 'foreign_draft' || (held.version === null && held.planId === null)) {
    // What is held instead (a draft someone else made, or that mixes theirs with ours) says what a person can do.
    throw new ConnectorError('NOTHING_HELD', `dataset ${ctx.dataset} has no held change of the connector's`, {
      action: 'reject',
      context: { dataset: ctx.dataset, held: held?.kind ?? null, version: held?.version ?? null },
    });
  }
  return held;
}

/**
 * A person approves the held change: publish its draft with the flags its
 * guards need (A5: allow_mass_delete when over half would go, allow_empty
 * when nothing is left) and nothing else; the snapshot advances on 200.
 * A change kept unsent (A12) is sent now, then published the same way.
 */
export async function approveHeld(ctx: ExecContext): Promise<HeldActionResult> {
  const held = heldOrThrow(ctx);
  const run = held.planId ? ledger.load(ctx, held.planId) : null;
  if (!run) throw new ConnectorError('PLAN_FILE_MISSING', `the plan of held draft ${held.version} is gone; run discard, then sync`, { action: 'stop' });
  if (held.version === null) return approveUnsent(ctx, run);
  const detail = (await ctx.client.getVersion(held.version)).value;
  if (detail.status === 'active' || detail.status === 'superseded') {
    ledger.published(ctx, run, null, held.version);
    return { dataset: ctx.dataset, action: 'published', version: held.version, message: 'already published' };
  }
  if (detail.status !== 'draft') {
    ledger.dropHeld(ctx, run.plan.id);
    return {
      dataset: ctx.dataset,
      action: 'expired',
      version: held.version,
      code: `DRAFT_${detail.status.toUpperCase()}`, // expired, or discarded in the portal
      message: `draft ${held.version} is ${detail.status} on the server: nothing was published, and the held change is dropped`,
    };
  }
  const flags = draftGuards(ctx, run, detail.counts).requiredFlags;
  const rj = ledger.stepsOf(ctx, run.plan.id);
  try {
    const end = await publishDraft(ctx, run, rj, held.version, flags, `approve:${held.since}`);
    if (end.kind === 'held') return { dataset: ctx.dataset, action: 'staged', version: held.version, code: `HELD_${end.held.toUpperCase()}`, message: end.reason };
  } catch (err) {
    if (hasCode(err, 'DRAFT_EXPIRED', 'CONFLICT')) {
      await ctx.client.discardVersion(held.version).catch(() => undefined);
      ledger.dropHeld(ctx, run.plan.id);
      return {
        dataset: ctx.dataset,
        action: 'expired',
        version: held.version,
        code: (err as ConnectorError).code,
        message: `draft ${held.version} could no longer be published (${(err as ConnectorError).code}): nothing was published, and the held change is dropped`,
      };
    }
    throw err;
  }
  ctx.logger.info(event('draft.approved', { version: held.version, flags }), 'held change approved and published');
  return { dataset: ctx.dataset, action: 'published', version: held.version, flags, message: `published version ${held.version}` };
}

/**
 * Send a change that was kept unsent (issue 11: the key had not shown that it
 * stages, A12), as approved: under its own journal (reopened, so a crash
 * resumes it), with the flags it needs. It stays recorded as held until it is
 * published: an approve that cannot finish now (the API unreachable) is run
 * again, or the next sync finishes the open plan. If the dataset moved since,
 * it is dropped: sync plans anew.
 */
async function approveUnsent(ctx: ExecContext, held: PlanRun): Promise<HeldActionResult> {
  // Issue 11: approved, it may go out through any key; staged unless the key is known to publish every write anyway.
  // The approval is a transition of the plan in its journal (the plan itself is never changed).
  const run = ledger.approve(ctx, held, held.approved ? held.direct : stagingOf(ctx, held, true).direct);
  const flags = run.plan.requiredFlags;
  let end;
  try {
    end = await execute(ctx, run, ledger.stepsOf(ctx, run.plan.id));
  } catch (err) {
    // Anything else leaves the plan open and held: approve again, or the next sync or resume finishes it, approved.
    if (!needsReplan(err)) throw err;
    await abandonPlan(ctx, run.plan.id, (err as Error).message);
    ledger.dropHeld(ctx, null);
    return {
      dataset: ctx.dataset,
      action: 'expired',
      version: null,
      code: (err as ConnectorError).code,
      message: `the dataset changed since the change was held (${(err as ConnectorError).code}): it was not sent, and the held change is dropped; run sync again to plan it anew`,
    };
  }
  if (end.kind === 'nothing') {
    ledger.dropHeld(ctx, null);
    throw new ConnectorError('ALL_REFUSED', `the server refused all ${end.refused} records of the held change`, { action: 'reject', context: { dataset: ctx.dataset } });
  }
  if (end.kind === 'held') return { dataset: ctx.dataset, action: 'staged', version: end.version, code: `HELD_${end.held.toUpperCase()}`, message: end.reason };
  ctx.logger.info(event('draft.approved', { version: end.version, flags, unsent: true }), 'held change approved, sent and published');
  return { dataset: ctx.dataset, action: 'published', version: end.version, flags, message: `sent and published version ${end.version}` };
}

/** A person drops the held change: discard its draft (the outcome records the export's hash). */
export async function discardHeld(ctx: ExecContext): Promise<HeldActionResult> {
  const held = heldOrThrow(ctx);
  // An approve of a change kept unsent that stopped half-way left its plan open: drop the draft of what it sent, and the plan.
  if (held.planId && ledger.openPlan(ctx)?.planId === held.planId) await abandonPlan(ctx, held.planId, 'discarded by a person');
  if (held.version !== null) {
    try {
      await ctx.client.discardVersion(held.version);
    } catch (err) {
      if (!hasCode(err, 'DRAFT_EXPIRED', 'VERSION_NOT_FOUND', 'CONFLICT')) throw err;
    }
  }
  const fileHash = (held.summary as { fileHash?: string | null } | null)?.fileHash ?? null;
  ledger.dropHeld(ctx, held.planId, { result: 'discarded', detail: { version: held.version, fileHash } });
  ctx.logger.info(event('draft.discarded', { version: held.version }), 'held change discarded');
  const what = held.version === null ? 'the change kept unsent' : `draft ${held.version}`;
  return { dataset: ctx.dataset, action: 'discarded', version: held.version, message: `discarded ${what}` };
}
