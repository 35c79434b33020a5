import type { Dataset } from '../api/wire.js';
import { hasCode } from '../errors.js';
import type { ExecContext } from './context.js';
import { foreignDraft, isMixed } from './drafts.js';
import { loadPlan, removePlan } from './exec-plan.js';
import type { SyncResult } from './outcome.js';
import { finishPublished } from './publish.js';
import { reconcile } from './reconcile.js';

/** Why a sync stops before planning: a held change or a foreign draft. */
export interface GateStop {
  result: SyncResult;
  code: string;
  message: string;
}

interface HeldSummary {
  fileHash?: string | null;
}

/**
 * Before planning: settle a held change and any pending draft (A11: a pending
 * draft blocks publishing writes and replaces, and staged writes would join it).
 * - our held draft was published meanwhile (approve, or a person in the portal): confirm it;
 * - it is still pending: same export → stay held; newer export → discard it and go on;
 * - it is gone (expired, discarded): forget it and stage again from the current source;
 * - a draft holding our writes and someone else's: wait for a person, whatever on_foreign_draft says;
 * - a draft we did not make: on_foreign_draft wait (report, stop here) or discard.
 */
export async function heldGate(ctx: ExecContext, fileHash: string | null): Promise<GateStop | null> {
  let ds: Dataset = (await ctx.client.getDataset()).value;
  const held = ctx.store.held();
  if (held && held.kind !== 'foreign_draft' && held.version === null) {
    // Kept unsent (A12): nothing of it is on the server.
    const same = fileHash !== null && (held.summary as HeldSummary | null)?.fileHash === fileHash;
    if (same) return { result: held.kind === 'guard' ? 'held' : 'staged', code: `HELD_${held.kind.toUpperCase()}`, message: held.reason };
    dropHeld(ctx, held.planId);
    ctx.logger.warn({ event: 'draft.discarded', kind: 'held_superseded', version: null, planId: held.planId }, 'a newer export replaces the held change');
  } else if (held && held.kind !== 'foreign_draft' && held.version !== null) {
    const status = (await ctx.client.getVersion(held.version).catch(() => null))?.value.status ?? null;
    if (status === 'active' || status === 'superseded') {
      const plan = held.planId ? loadPlan(ctx.planDir, held.planId) : null;
      if (plan && ctx.store.info().activeVersion === plan.baseVersion) finishPublished(ctx, plan, null, held.version);
      else ctx.store.clearHeld(); // reconcile rebuilds from the server
      ctx.logger.info({ event: 'sync.published', kind: 'held_published', version: held.version }, 'the held change was published');
    } else if (ds.draft_version === held.version) {
      const same = fileHash !== null && (held.summary as HeldSummary | null)?.fileHash === fileHash;
      if (same) {
        return { result: held.kind === 'guard' ? 'held' : 'staged', code: `HELD_${held.kind.toUpperCase()}`, message: held.reason };
      }
      try {
        await ctx.client.discardVersion(held.version);
      } catch (err) {
        if (hasCode(err, 'PUBLISH_REQUIRED', 'FORBIDDEN')) {
          return { result: 'staged', code: 'HELD_PUBLISH_REQUIRED', message: `draft ${held.version} waits for a person to publish it in the portal` };
        }
        throw err;
      }
      dropHeld(ctx, held.planId);
      ctx.logger.warn({ event: 'draft.discarded', kind: 'held_superseded', version: held.version }, 'a newer export replaces the held change');
      ds = (await ctx.client.getDataset()).value;
    } else {
      dropHeld(ctx, held.planId);
      ctx.logger.warn({ event: 'draft.expired', kind: 'held_gone', version: held.version, status }, 'the held draft is gone; staging again from the current export');
    }
  } else if (held && held.version !== null && isMixed(held.summary)) {
    // Our writes and someone else's in one draft: only a person decides (never discarded here).
    if (ds.draft_version === held.version) return { result: 'waiting', code: 'DRAFT_MIXED', message: held.reason };
    const status = (await ctx.client.getVersion(held.version).catch(() => null))?.value.status ?? null;
    dropHeld(ctx, held.planId);
    if (status === 'active' || status === 'superseded') {
      ctx.logger.info({ event: 'sync.published', kind: 'mixed_published', version: held.version }, 'a person published the draft holding the connector\'s writes');
      await reconcile(ctx, true);
    }
    ds = (await ctx.client.getDataset()).value;
  }
  if (ds.draft_version === null) {
    if (ctx.store.held()?.kind === 'foreign_draft') ctx.store.clearHeld();
    return null;
  }
  // A draft we did not make (ours were settled above or by resume).
  return foreignDraft(ctx, ds.draft_version);
}

function dropHeld(ctx: ExecContext, planId: string | null): void {
  ctx.store.clearHeld();
  if (planId) removePlan(ctx.planDir, planId);
}
