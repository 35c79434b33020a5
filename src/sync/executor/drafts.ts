import { ConnectorError, hasCode } from '../../errors.js';
import type { ExecContext } from './context.js';
import * as ledger from './ledger.js';
import type { DraftCounts } from '../core/plan.js';
import { foreignDraftMessage } from '../core/gate.js';
import type { RunJournal } from './run-journal.js';
import { event } from '../../log/events.js';

/**
 * Whose draft is it? A pending draft blocks publishing writes and replaces,
 * and staged writes join it (A11), so the connector must know whether a draft
 * holds only what its journal says it sent. It discards only such a draft;
 * one with anyone else's change in it is left for a person (never discarded).
 */

/** Why a sync stops before or while sending: a draft that is not (only) ours. */
export interface DraftStop {
  result: 'waiting';
  code: string;
  message: string;
}

/** A pending draft the connector did not make blocks the dataset (on_foreign_draft: wait). */
export class ForeignDraftError extends ConnectorError {
  constructor(readonly version: number, message: string) {
    super('DRAFT_PENDING', message, { action: 'hold', context: { version } });
  }
}

/** A draft holds the connector's writes and someone else's: it is held for a person, never discarded. */
export class MixedDraftError extends ConnectorError {
  constructor(
    readonly version: number,
    readonly planId: string,
    readonly counts: DraftCounts,
    readonly sent: DraftCounts[],
  ) {
    super(
      'DRAFT_MIXED',
      `draft ${version} holds changes the connector did not send (${fmt(counts)}; the connector sent ${sent.length ? sent.map(fmt).join(' or ') : 'an unknown change'}): publish or discard it in the portal; the connector then goes on by itself`,
      { action: 'hold', context: { version, planId, counts, sent } },
    );
  }
}

function fmt(c: DraftCounts): string {
  return `+${c.added} ~${c.changed} -${c.deleted}`;
}

const RECORD_KINDS = new Set(['post', 'patch', 'delete']);

/**
 * The counts a plan's own draft may show, from its journal: per-record, the
 * staged writes done (and, when one write's outcome is unknown, that many plus
 * it); replace/upload, the counts its job reported. Empty when not known.
 */
export function sentCounts(rj: RunJournal): DraftCounts[] {
  const job = rj.get('job');
  if (job?.status === 'done') {
    const c = (job.result as { counts?: DraftCounts } | null)?.counts;
    return c ? [c] : [];
  }
  const done: DraftCounts = { added: 0, changed: 0, deleted: 0 };
  let unknown: string | null = null;
  for (const e of rj.all()) {
    if (!RECORD_KINDS.has(e.kind)) continue;
    if (e.status === 'intent') unknown = e.kind;
    else if (e.status === 'done' && (e.result as { status?: string } | null)?.status === 'draft') bump(done, e.kind);
  }
  if (unknown === null) return [done];
  const after = { ...done };
  bump(after, unknown);
  return [done, after];
}

/** True when a draft's counts are exactly what the journal says the plan sent into it. */
export function onlyOurs(counts: DraftCounts, rj: RunJournal): boolean {
  return sentCounts(rj).some((c) => c.added === counts.added && c.changed === counts.changed && c.deleted === counts.deleted);
}

function bump(c: DraftCounts, kind: string): void {
  if (kind === 'post') c.added++;
  else if (kind === 'patch') c.changed++;
  else c.deleted++;
}

/**
 * A pending draft the connector did not make: on_foreign_draft `discard`
 * drops it (null: go on); `wait` records it as held and reports it.
 */
export async function foreignDraft(ctx: ExecContext, version: number): Promise<DraftStop | null> {
  if (ctx.policy.on_foreign_draft === 'discard') {
    await ctx.client.discardVersion(version);
    ctx.summary.warnings.push(`discarded a foreign draft ${version} (on_foreign_draft: discard)`);
    ctx.logger.warn(event('draft.discarded', { kind: 'foreign_draft', version }), 'discarded a draft the connector did not make');
    return null;
  }
  const message = foreignDraftMessage(version);
  ledger.foreignHeld(ctx, version, message);
  ctx.logger.warn(event('sync.skipped', { kind: 'foreign_draft', version }), 'a foreign draft blocks the dataset');
  return { result: 'waiting', code: 'DRAFT_PENDING', message };
}

/**
 * Hold a mixed draft for a person: recorded as a foreign draft (someone else's
 * change is in it) that names the plan whose writes it also holds, so a later
 * publish of it in the portal is confirmed as the connector's for those records.
 */
export function holdMixed(ctx: ExecContext, err: MixedDraftError, fileHash: string | null): DraftStop {
  ledger.mixed(
    ctx,
    { version: err.version, reason: err.message, planId: err.planId, summary: { mixed: true, counts: err.counts, sent: err.sent, fileHash } },
    { code: err.code, version: err.version, planId: err.planId },
  );
  ctx.logger.warn(event('sync.skipped', { kind: 'mixed_draft', version: err.version, counts: err.counts, sent: err.sent, planId: err.planId }), 'a draft holds the connector\'s writes and someone else\'s changes: left for a person');
  return { result: 'waiting', code: err.code, message: err.message };
}

/**
 * A pending draft that is not the current plan's: one a closed plan of ours
 * made (the journal says so) is settled as ours (settleOrphan); any other
 * follows on_foreign_draft. Null: it is gone, go on.
 */
export async function otherDraft(ctx: ExecContext, version: number): Promise<DraftStop | null> {
  const planId = orphanPlanOf(ctx, version);
  if (planId === null) return foreignDraft(ctx, version);
  await settleOrphan(ctx, planId, version);
  return null;
}

/** The closed plan of ours that made draft `version` (an orphan), or null: someone else's draft, or the open plan's. */
export function orphanPlanOf(ctx: ExecContext, version: number): string | null {
  const planId = ledger.planOfDraft(ctx, version);
  return planId !== null && ledger.journaledPlan(ctx, planId)?.status !== 'open' ? planId : null;
}

/** The open plan of ours that made draft `version` (a sync that stopped before publishing it), or null. */
export function openPlanOf(ctx: ExecContext, version: number): string | null {
  const planId = ledger.planOfDraft(ctx, version);
  return planId !== null && ledger.journaledPlan(ctx, planId)?.status === 'open' ? planId : null;
}

/**
 * A pending draft one of our closed plans made (a sync that stopped after
 * staging): discarded when it holds exactly what that plan sent, else
 * MixedDraftError (held for a person). Never treated as someone else's draft.
 */
export async function settleOrphan(ctx: ExecContext, planId: string, version: number): Promise<void> {
  const rj = ledger.stepsOf(ctx, planId);
  const counts = (await ctx.client.getVersion(version)).value.counts;
  if (!onlyOurs(counts, rj)) throw new MixedDraftError(version, planId, counts, sentCounts(rj));
  try {
    await ctx.client.discardVersion(version);
  } catch (err) {
    if (!hasCode(err, 'DRAFT_EXPIRED', 'VERSION_NOT_FOUND', 'CONFLICT')) throw err;
  }
  ctx.logger.warn(event('draft.discarded', { kind: 'own_orphan', version, planId }), 'discarded a draft a stopped sync of the connector had left');
}
