import { randomUUID } from 'node:crypto';
import { ApiError } from '../api/errors.js';
import type { WriteResult } from '../api/wire.js';
import { ConnectorError, hasCode } from '../errors.js';
import { canonicalHash, canonicalJson } from '../model/canonical.js';
import type { DatasetRecord, RecordPatch } from '../model/record.js';
import type { ExecContext } from './context.js';
import { planProvenance, savePlan, type DraftCounts, type ExecPlan } from './exec-plan.js';
import { warnLegacyKey } from './legacy-key.js';
import { learnFromWrite, sendBinding } from './key-staging.js';
import { checkpoint } from './interrupt.js';
import { ForeignDraftError, MixedDraftError, foreignDraft, otherDraft } from './drafts.js';

const RECORD_KINDS = new Set(['post', 'patch', 'delete']);
import type { RunJournal } from './run-journal.js';
import type { StageResult } from './stage-result.js';

/** One per-record request of a plan. */
export type RecordOp =
  | { kind: 'post'; id: string; record: DatasetRecord }
  | { kind: 'patch'; id: string; patch: RecordPatch; record: DatasetRecord }
  | { kind: 'delete'; id: string };

/** The plan's requests in a fixed order (adds, changes, deletes), so a resumed run walks the same list; read from the changeset as they go. */
export function* recordOps(plan: ExecPlan): Generator<RecordOp> {
  const c = plan.changeset;
  for (const r of c.adds) yield { kind: 'post', id: r.record_id, record: r };
  for (const ch of c.changes) yield { kind: 'patch', id: ch.record_id, patch: ch.patch, record: ch.record };
  for (const d of c.deletes) yield { kind: 'delete', id: d.record_id };
}

/** A server row error of a per-record write, with the record it concerns. */
export interface RefusedOp {
  op: RecordOp;
  error: ApiError;
}

/**
 * Send the plan's per-record writes (staged with `publish=false`, or published
 * directly), journaling each one. Resumes a partly run plan: done steps are
 * skipped; a step whose outcome is unknown is re-read before it is re-sent.
 */
export async function applyPerRecord(ctx: ExecContext, plan: ExecPlan, rj: RunJournal, refused: RefusedOp[]): Promise<StageResult> {
  const done: DraftCounts = { added: 0, changed: 0, deleted: 0 };
  let draft: number | null = null;
  let published: number | null = null;
  let legacy = false;
  let publishDenied = false;

  const commit = (op: RecordOp, name: string, res: { version: number; status: WriteResult['status']; etag: string | null; publish_denied?: boolean }): void => {
    ctx.db.transaction(() => {
      if (res.status === 'published') {
        ctx.store.confirm({
          activeVersion: res.version,
          etag: res.etag,
          ...(op.kind === 'delete' ? { deletes: [op.id] } : { upserts: [op.record] }),
          provenance: planProvenance(plan),
        });
      }
      // A12: what the key did with publish=false, remembered in the same transaction as the write it learned from.
      if (!plan.direct) learnFromWrite(ctx, res.status);
      rj.done(name, { version: res.version, status: res.status, publish_denied: res.publish_denied ?? false });
    });
    rj.committed(op.kind);
  };
  /** Count a write's result; 'stop' when the key published a write of a change that must not go out unapproved. */
  const track = (op: RecordOp, res: { version: number; status: string; publish_denied?: boolean }): 'go' | 'stop' => {
    if (res.publish_denied) publishDenied = true;
    if (res.status !== 'published') {
      draft = res.version;
      bump(done, op);
      return 'go';
    }
    published = res.version;
    if (plan.direct) return 'go';
    // A12: a legacy key published although staging was asked.
    legacy = true;
    warnLegacyKey(ctx, { version: res.version, planId: plan.planId });
    if (!plan.approved && (plan.heldBy || plan.stageOnly)) return 'stop';
    // Within the guards: every write publishes anyway, so the rest goes as direct writes
    // (If-Match on the version the last one confirmed, not on the plan's stale base).
    plan.direct = true;
    savePlan(ctx.planDir, plan);
    return 'go';
  };

  // Whether a staged write of this plan may already be in a draft (then the draft is ours, A10).
  let staged = rj.all().some(
    (e) => RECORD_KINDS.has(e.kind) && (e.status === 'intent' || (e.status === 'done' && (e.result as { status?: string } | null)?.status === 'draft')),
  );

  for (const op of recordOps(plan)) {
    const name = `${op.kind}:${op.id}`;
    let e = rj.get(name);
    if (e?.status === 'done') {
      if (track(op, e.result as { version: number; status: string; publish_denied?: boolean }) === 'stop') return { kind: 'unsent', version: published! };
      continue;
    }
    if (e?.status === 'failed') continue;
    checkpoint(ctx);
    // Issue 11: decided before the intent is journaled, so a write that may not go out leaves no trace of one.
    const binding = sendBinding(ctx, plan);
    let res: { version: number; status: WriteResult['status']; etag: string | null; publish_denied?: boolean } | null = null;
    const first = !plan.direct && !staged;
    if (e?.status === 'intent') res = await wasApplied(ctx, plan, op, done);
    else {
      // A11: a staged write joins any pending draft; the first one must start our own.
      if (first) await noPendingDraft(ctx);
      e = rj.intent(name, { kind: op.kind, idempotencyKey: randomUUID(), bodyHash: bodyHash(op), intent: { record_id: op.id } });
    }
    if (!res) {
      try {
        const sent = await send(ctx, plan, op, e.idempotencyKey ?? undefined, binding);
        res = { ...sent.value, etag: sent.etag };
      } catch (err) {
        if (hasCode(err, 'OUTCOME_UNKNOWN')) {
          // Issue 4: re-read before re-sending a write whose answer was lost.
          res = await wasApplied(ctx, plan, op, done);
          if (!res) {
            const sent = await send(ctx, plan, op, e.idempotencyKey ?? undefined, binding);
            res = { ...sent.value, etag: sent.etag };
          }
        } else if (err instanceof ApiError && err.status === 422 && err.code === 'VALIDATION_FAILED') {
          rj.failed(name, { code: err.code, rowErrors: err.rowErrors });
          refused.push({ op, error: err });
          continue;
        } else {
          throw err;
        }
      }
    }
    commit(op, name, res);
    if (res.status === 'draft') {
      staged = true;
      if (first) await checkNewDraft(ctx, plan, res.version, op);
    }
    if (track(op, res) === 'stop') return { kind: 'unsent', version: published! };
  }
  if (published !== null && (plan.direct || legacy) && draft === null) return { kind: 'published', version: published, legacy };
  if (draft !== null) return { kind: 'staged', version: draft, publishDenied };
  return { kind: 'nothing' };
}

async function send(ctx: ExecContext, plan: ExecPlan, op: RecordOp, idempotencyKey: string | undefined, binding: { onlyKey?: string }) {
  // If-Match: staged writes against the plan's base; direct writes against the version the last one confirmed.
  const ifMatch = plan.direct ? ctx.store.info().etag : plan.baseEtag;
  const opts = {
    ...binding,
    ...(plan.direct ? {} : { publish: false }),
    ...(idempotencyKey ? { idempotencyKey } : {}),
    ...(ifMatch ? { ifMatch } : {}),
  };
  switch (op.kind) {
    case 'post':
      return ctx.client.createRecord(op.record, opts);
    case 'patch':
      return ctx.client.patchRecord(op.id, op.patch, opts);
    case 'delete':
      return ctx.client.deleteRecord(op.id, opts);
  }
}

/**
 * Did a write whose answer was lost take effect? Direct: read the record
 * (GET /records/{id}, A31). Staged: the draft's counts (A19) against the
 * writes already done — sends are sequential, so at most one is unknown.
 */
async function wasApplied(
  ctx: ExecContext,
  plan: ExecPlan,
  op: RecordOp,
  done: DraftCounts,
): Promise<{ version: number; status: 'published' | 'draft'; etag: string | null } | null> {
  if (plan.direct) {
    let current: DatasetRecord | null = null;
    let etag: string | null = null;
    try {
      const r = await ctx.client.getRecord(op.id);
      current = r.value;
      etag = r.etag;
    } catch (err) {
      if (!hasCode(err, 'RECORD_NOT_FOUND')) throw err;
      const ds = await ctx.client.getDataset();
      etag = ds.etag;
      if (op.kind === 'delete') return { version: ds.value.active_version, status: 'published', etag };
      return null;
    }
    if (op.kind === 'delete') return null;
    if (canonicalJson(current) !== canonicalJson(op.record)) return null;
    const version = Number(/v(\d+)/.exec(etag ?? '')?.[1] ?? (await ctx.client.getDataset()).value.active_version);
    return { version, status: 'published', etag };
  }
  const ds = (await ctx.client.getDataset()).value;
  if (ds.draft_version === null) return null;
  const counts = (await ctx.client.getVersion(ds.draft_version)).value.counts;
  const after = { ...done };
  bump(after, op);
  if (sameCounts(counts, done)) return null;
  if (sameCounts(counts, after)) return { version: ds.draft_version, status: 'draft', etag: null };
  // Neither what was sent before nor with this write: someone else's change is in the draft.
  throw new MixedDraftError(ds.draft_version, plan.planId, counts, [done, after]);
}

/** Before the first staged write: no draft may be pending, or the write would join it (A11). */
async function noPendingDraft(ctx: ExecContext): Promise<void> {
  const pending = (await ctx.client.getDataset()).value.draft_version;
  if (pending === null) return;
  const stop = await otherDraft(ctx, pending);
  if (stop) throw new ForeignDraftError(pending, stop.message);
}

/**
 * After the first staged write: it must have made a new draft on the plan's
 * base holding just that write. Otherwise it joined someone else's draft (one
 * made between the check and the write): on_foreign_draft discard drops that
 * draft and plans anew; wait holds it for a person.
 */
async function checkNewDraft(ctx: ExecContext, plan: ExecPlan, version: number, op: RecordOp): Promise<void> {
  const d = (await ctx.client.getVersion(version)).value;
  const one: DraftCounts = { added: 0, changed: 0, deleted: 0 };
  bump(one, op);
  if (d.status === 'draft' && d.base_version === plan.baseVersion && sameCounts(d.counts, one)) return;
  if (ctx.policy.on_foreign_draft === 'discard' && d.status === 'draft') {
    await foreignDraft(ctx, version);
    throw new ConnectorError('FOREIGN_DRAFT_DISCARDED', `The first write went into draft ${version}, which someone else had made; it was discarded (on_foreign_draft: discard).`, {
      action: 'retry',
      context: { dataset: ctx.dataset, version },
    });
  }
  throw new MixedDraftError(version, plan.planId, d.counts, [one]);
}

function bump(c: DraftCounts, op: RecordOp): void {
  if (op.kind === 'post') c.added++;
  else if (op.kind === 'patch') c.changed++;
  else c.deleted++;
}

/** Equal added/changed/deleted counts. */
export function sameCounts(a: DraftCounts, b: DraftCounts): boolean {
  return a.added === b.added && a.changed === b.changed && a.deleted === b.deleted;
}

function bodyHash(op: RecordOp): string {
  return canonicalHash(op.kind === 'post' ? op.record : op.kind === 'patch' ? op.patch : { delete: op.id });
}
