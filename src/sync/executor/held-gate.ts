import type { Dataset } from '../../api/wire.js';
import { hasCode } from '../../errors.js';
import type { HeldDraft } from '../../snapshot/types.js';
import type { ExecContext } from './context.js';
import { confirmedParts } from '../core/diff.js';
import { foreignDraftMessage, isMixed, otherDraft } from './drafts.js';
import * as ledger from './ledger.js';
import type { SyncResult } from '../outcome.js';
import { reconcile } from './reconcile.js';
import { event } from '../../log/events.js';

/** Why a sync stops before planning: a held change or a foreign draft. */
export interface GateStop {
  result: SyncResult;
  code: string;
  message: string;
}

interface HeldSummary {
  fileHash?: string | null;
  /** The feed whose file the held change came from (issue 13); absent: the dataset's primary feed. */
  feed?: string;
}

/** Which file a sync reads: its content hash and, for a dataset of several feeds, the feed and the dataset's primary one. */
export interface GateFile {
  fileHash: string | null;
  feed?: { name: string; primary: string } | null;
}

/**
 * Issue 13: a held change of one feed is never discarded by a file of another
 * (a person has not seen it); that file waits, kept, until approve or discard.
 */
function otherFeedStop(ctx: ExecContext, held: HeldDraft, file: GateFile): GateStop | null {
  if (!file.feed || held.kind === 'foreign_draft') return null;
  const heldFeed = (held.summary as HeldSummary | null)?.feed ?? file.feed.primary;
  if (heldFeed === file.feed.name) return null;
  return {
    result: 'waiting',
    code: 'HELD_OTHER_FEED',
    message:
      `a change of feed "${heldFeed}" waits for a person (${held.reason}): approve it (dataset-connector approve ${ctx.dataset}) or discard it ` +
      `(dataset-connector discard ${ctx.dataset}); this file of feed "${file.feed.name}" is kept and synced after that`,
  };
}

/**
 * Settle a held change with the server, before a sync plans and before a
 * reconcile rebuilds (so a change of ours is never read back as a foreign edit):
 * - its draft was published (approve, or a person in the portal): confirmed as ours;
 * - its draft is gone (expired, discarded): forgotten, staged again from the next export;
 * - still pending, or kept unsent (A12): left as it is (returned).
 * Also settles a mixed draft (ours and someone else's) the same way.
 */
export async function settleHeld(ctx: ExecContext, ds: Dataset): Promise<HeldDraft | null> {
  const held = ctx.store.held();
  if (!held || held.version === null) return held;
  const mixed = held.kind === 'foreign_draft' && isMixed(held.summary);
  if (held.kind === 'foreign_draft' && !mixed) return held;
  if (ds.draft_version === held.version) return held;
  const status = (await ctx.client.getVersion(held.version).catch(() => null))?.value.status ?? null;
  const run = held.planId ? ledger.load(ctx, held.planId) : null;
  if (status === 'active' || status === 'superseded') {
    if (run && !mixed && ctx.store.info().activeVersion === run.plan.baseVersion) ledger.published(ctx, run, null, held.version);
    else {
      // The snapshot cannot just advance (someone else's change is in it too, or it moved): read the server,
      // knowing which records are the plan's own.
      const parts = run ? confirmedParts(run.changeset) : null;
      await reconcile(ctx, true, parts && run ? { records: parts.upsertTexts, own: parts.own, provenance: ledger.provenanceOf(run) } : undefined);
      ledger.dropHeld(ctx, held.planId);
    }
    ctx.logger.info(event('sync.published', { kind: mixed ? 'mixed_published' : 'held_published', version: held.version }), 'the held change was published');
    return null;
  }
  if (status === 'draft') return held; // pending, though not the dataset's draft: leave it to the gate
  ledger.dropHeld(ctx, held.planId);
  ctx.logger.warn(event('draft.expired', { kind: 'held_gone', version: held.version, status }), 'the held draft is gone; staging again from the current export');
  return null;
}

/**
 * Before planning: settle a held change and any pending draft (A11: a pending
 * draft blocks publishing writes and replaces, and staged writes would join it).
 * - settled with the server first (settleHeld);
 * - still pending: a file of another feed → wait (issue 13); same export → stay held; newer export of its feed → discard it and go on;
 * - a draft holding our writes and someone else's: wait for a person, whatever on_foreign_draft says;
 * - a draft we did not make: on_foreign_draft wait (report, stop here) or discard.
 */
export async function heldGate(ctx: ExecContext, file: GateFile): Promise<GateStop | null> {
  const fileHash = file.fileHash;
  let ds: Dataset = (await ctx.client.getDataset()).value;
  const held = await settleHeld(ctx, ds);
  const other = held && otherFeedStop(ctx, held, file);
  if (other) return other;
  const same = held !== null && fileHash !== null && (held.summary as HeldSummary | null)?.fileHash === fileHash;
  if (held && held.kind !== 'foreign_draft' && held.version === null) {
    // Kept unsent (A12): nothing of it is on the server.
    if (same) return { result: held.kind === 'guard' ? 'held' : 'staged', code: `HELD_${held.kind.toUpperCase()}`, message: held.reason };
    ledger.dropHeld(ctx, held.planId);
    ctx.logger.warn(event('draft.discarded', { kind: 'held_superseded', version: null, planId: held.planId }), 'a newer export replaces the held change');
  } else if (held && held.kind !== 'foreign_draft' && held.version !== null) {
    // Still pending.
    if (same) return { result: held.kind === 'guard' ? 'held' : 'staged', code: `HELD_${held.kind.toUpperCase()}`, message: held.reason };
    try {
      await ctx.client.discardVersion(held.version);
    } catch (err) {
      if (hasCode(err, 'PUBLISH_REQUIRED', 'FORBIDDEN')) {
        return { result: 'staged', code: 'HELD_PUBLISH_REQUIRED', message: `draft ${held.version} waits for a person to publish it in the portal` };
      }
      throw err;
    }
    ledger.dropHeld(ctx, held.planId);
    ctx.logger.warn(event('draft.discarded', { kind: 'held_superseded', version: held.version }), 'a newer export replaces the held change');
    ds = (await ctx.client.getDataset()).value;
  } else if (held && held.version !== null && isMixed(held.summary)) {
    // Our writes and someone else's in one draft, still pending: only a person decides (never discarded here).
    return { result: 'waiting', code: 'DRAFT_MIXED', message: held.reason };
  }
  if (ds.draft_version === null) {
    if (ctx.store.held()?.kind === 'foreign_draft') ctx.store.clearHeld();
    return null;
  }
  // Not the held change's draft: an orphan of a closed plan of ours, or someone else's.
  return otherDraft(ctx, ds.draft_version);
}

/**
 * What heldGate would do, acting on nothing (for `plan`, which sends nothing):
 * the stop a sync would meet before planning, or null when it would plan. A
 * held draft no longer pending, one of an older export, and an orphan of a
 * closed plan of ours are settled or discarded by a sync, which then plans.
 */
export async function heldGateVerdict(ctx: ExecContext, file: GateFile): Promise<GateStop | null> {
  const fileHash = file.fileHash;
  const ds: Dataset = (await ctx.client.getDataset()).value;
  const held = ctx.store.held();
  const pending = held !== null && (held.version === null || held.version === ds.draft_version);
  const other = held && pending && otherFeedStop(ctx, held, file);
  if (other) return other;
  if (held && pending && held.kind !== 'foreign_draft') {
    const same = fileHash !== null && (held.summary as HeldSummary | null)?.fileHash === fileHash;
    return same ? { result: held.kind === 'guard' ? 'held' : 'staged', code: `HELD_${held.kind.toUpperCase()}`, message: held.reason } : null;
  }
  if (held && pending && isMixed(held.summary)) return { result: 'waiting', code: 'DRAFT_MIXED', message: held.reason };
  if (ds.draft_version === null || (held && held.kind !== 'foreign_draft' && held.version === ds.draft_version)) return null;
  const ours = ledger.planOfDraft(ctx, ds.draft_version);
  if (ours !== null && ledger.journaledPlan(ctx, ours)?.status !== 'open') return null;
  if (ctx.policy.on_foreign_draft === 'discard') return null;
  return { result: 'waiting', code: 'DRAFT_PENDING', message: foreignDraftMessage(ds.draft_version) };
}
