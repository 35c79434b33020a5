import type { Dataset } from '../../api/wire.js';
import { hasCode } from '../../errors.js';
import { event } from '../../log/events.js';
import type { HeldDraft } from '../../snapshot/types.js';
import { confirmedParts } from '../core/diff.js';
import { gateStep, heldAwaitsServer, heldFate, type GateFacts, type GateFile, type GateStop } from '../core/gate.js';
import type { ExecContext } from './context.js';
import { MixedDraftError, foreignDraft, onlyOurs, openPlanOf, orphanPlanOf, sentCounts, settleOrphan } from './drafts.js';
import * as ledger from './ledger.js';
import { reconcile } from './reconcile.js';

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
  if (!heldAwaitsServer(held, ds.draft_version)) return held;
  const mixed = held.kind === 'foreign_draft';
  const status = (await ctx.client.getVersion(held.version).catch(() => null))?.value.status ?? null;
  const fate = heldFate(status);
  const run = held.planId ? ledger.load(ctx, held.planId) : null;
  if (fate === 'published') {
    if (run && !mixed && ctx.store.state().activeVersion === run.plan.baseVersion) ledger.published(ctx, run, null, held.version);
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
  if (fate === 'pending') return held; // though not the dataset's draft: left to the gate
  ledger.dropHeld(ctx, held.planId);
  ctx.logger.warn(event('draft.expired', { kind: 'held_gone', version: held.version, status }), 'the held draft is gone; staging again from the current export');
  return null;
}

/** The gate's facts at this moment: the dataset's draft, whether our open plan or a closed plan of ours (an orphan) made it, and the file's feed. */
function factsOf(ctx: ExecContext, held: HeldDraft | null, draftVersion: number | null, file: GateFile): GateFacts {
  const orphanPlan = draftVersion === null ? null : orphanPlanOf(ctx, draftVersion);
  const openPlan = draftVersion === null ? null : openPlanOf(ctx, draftVersion);
  return { held, draftVersion, fileHash: file.fileHash, orphanPlan, openPlan, onForeignDraft: ctx.policy.on_foreign_draft, feed: file.feed };
}

/**
 * The draft of our open plan, met by the gate: a sync resumes its open plan
 * before the gate (run-sync.ts), so here it did not finish; the draft is ours
 * and is left as it is (never discarded, never called foreign) for the next sync.
 */
function openPlanStop(planId: string, version: number): GateStop {
  return { result: 'waiting', code: 'PLAN_OPEN', message: `draft ${version} is the connector's own, of plan ${planId}, which has not finished; the next sync resumes it` };
}

/**
 * Before planning: settle a held change with the server (settleHeld), then
 * act on each step of the one gate (core/gate.ts gateStep): stop, discard a
 * held change a newer export replaces, settle an orphan of ours, or deal with
 * a foreign draft (A11: a pending draft blocks publishing writes and replaces,
 * and staged writes would join it).
 */
export async function heldGate(ctx: ExecContext, file: GateFile): Promise<GateStop | null> {
  let ds: Dataset = (await ctx.client.getDataset()).value;
  let held = await settleHeld(ctx, ds);
  for (;;) {
    const s = gateStep(factsOf(ctx, held, ds.draft_version, file));
    switch (s.step) {
      case 'stop':
        return s.stop;
      case 'replace_held': {
        const { version, planId } = s.held;
        if (version !== null) {
          try {
            await ctx.client.discardVersion(version);
          } catch (err) {
            if (hasCode(err, 'PUBLISH_REQUIRED', 'FORBIDDEN')) {
              return { result: 'staged', code: 'HELD_PUBLISH_REQUIRED', message: `draft ${version} waits for a person to publish it in the portal` };
            }
            throw err;
          }
        }
        ledger.dropHeld(ctx, planId);
        ctx.logger.warn(event('draft.discarded', { kind: 'held_superseded', version, ...(version === null ? { planId } : {}) }), 'a newer export replaces the held change');
        // A restore is asked for by a person: the held change it throws away is said in its summary.
        if (ctx.summary.file?.startsWith('restore of ')) ctx.summary.warnings.push(discardedByRestore(s.held));
        if (version !== null) ds = (await ctx.client.getDataset()).value;
        held = null;
        continue;
      }
      case 'finish_open':
        return openPlanStop(s.planId, s.version);
      case 'settle_orphan':
        await settleOrphan(ctx, s.planId, s.version);
        return null;
      case 'foreign_draft':
        return foreignDraft(ctx, s.version);
      case 'plan':
        if (s.clearForeign) ledger.dropHeld(ctx, null);
        return null;
    }
  }
}

/**
 * What heldGate would do, acting on nothing (for `plan`, which sends
 * nothing): the same steps of the same gate, with the server and the state
 * db only read. A held change a newer export replaces is taken as discarded;
 * an orphan of ours is looked at as settleOrphan would (discarded, or held as
 * mixed). Not foreseen: a key refused the discard of a held draft (HELD_PUBLISH_REQUIRED).
 */
export async function heldGateVerdict(ctx: ExecContext, file: GateFile): Promise<GateStop | null> {
  const ds: Dataset = (await ctx.client.getDataset()).value;
  let held = ctx.store.held();
  if (heldAwaitsServer(held, ds.draft_version)) {
    const status = (await ctx.client.getVersion(held.version).catch(() => null))?.value.status ?? null;
    if (heldFate(status) !== 'pending') held = null;
  }
  let draftVersion = ds.draft_version;
  for (;;) {
    const s = gateStep(factsOf(ctx, held, draftVersion, file));
    switch (s.step) {
      case 'stop':
        return s.stop;
      case 'replace_held':
        if (s.held.version !== null && s.held.version === draftVersion) draftVersion = null;
        held = null;
        continue;
      case 'finish_open':
        return openPlanStop(s.planId, s.version);
      case 'settle_orphan': {
        const counts = (await ctx.client.getVersion(s.version)).value.counts;
        const rj = ledger.stepsOf(ctx, s.planId);
        if (onlyOurs(counts, rj)) return null;
        const mixed = new MixedDraftError(s.version, s.planId, counts, sentCounts(rj));
        return { result: 'waiting', code: mixed.code, message: mixed.message };
      }
      case 'foreign_draft':
        return s.stop;
      case 'plan':
        return null;
    }
  }
}

/** What a restore says of the held change it discards (plan --restore, the restore summary). */
export function discardedByRestore(held: HeldDraft): string {
  const guards = ((held.summary as { guards?: Array<{ guard: string; holds?: boolean }> } | null)?.guards ?? []).filter((g) => g.holds !== false).map((g) => g.guard);
  const why = held.kind === 'guard' ? `guard ${guards.length ? guards.join(', ') : held.reason}` : held.kind === 'staged' ? 'staged only' : held.kind.replace('_', ' ');
  return `the held change (${held.version === null ? 'kept unsent' : `version ${held.version}`}, ${why}) is discarded by this restore`;
}
