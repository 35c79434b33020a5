import { randomUUID } from 'node:crypto';
import { ApiError } from '../../api/errors.js';
import type { WriteResult } from '../../api/wire.js';
import { ConnectorError, hasCode } from '../../errors.js';
import { canonicalHash, canonicalJson } from '../../model/canonical.js';
import type { DatasetRecord } from '../../model/record.js';
import type { ExecContext } from './context.js';
import * as ledger from './ledger.js';
import { planOperations, stepName, type DraftCounts, type PlanOperation } from '../core/plan.js';
import type { PlanRun } from './plan-run.js';
import { warnLegacyKey } from './legacy-key.js';
import { sendBinding } from './key-knowledge.js';
import { checkpoint } from './interrupt.js';
import { ForeignDraftError, MixedDraftError, foreignDraft, otherDraft } from './drafts.js';
import type { RunJournal } from './run-journal.js';
import type { StageResult } from './stage-result.js';

const RECORD_KINDS = new Set(['post', 'patch', 'delete']);

/** One per-record request of a plan (planSync's list, read from the changeset as it goes). */
type RecordOp = PlanOperation;

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
export async function applyPerRecord(ctx: ExecContext, run: PlanRun, rj: RunJournal, refused: RefusedOp[]): Promise<StageResult> {
  const plan = run.plan;
  const done: DraftCounts = { added: 0, changed: 0, deleted: 0 };
  let draft: number | null = null;
  let published: number | null = null;
  let legacy = false;
  let publishDenied = false;
  // A12: once the key has published a write asked to stage, the rest goes direct. Not saved: a resumed run
  // replays the journaled answers below, in the same order, and comes to the same.
  let direct = run.direct;

  const commit = (op: RecordOp, name: string, res: { version: number; status: WriteResult['status']; etag: string | null; publish_denied?: boolean }): void => {
    ledger.writeDone(ctx, run, rj, name, op, res, !direct);
    rj.committed(kindOf(op));
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
    if (direct) return 'go';
    // A12: a legacy key published although staging was asked.
    legacy = true;
    warnLegacyKey(ctx, { version: res.version, planId: plan.id });
    if (!run.approved && (plan.heldBy || plan.stageOnly)) return 'stop';
    // Within the guards: every write publishes anyway, so the rest goes as direct writes
    // (If-Match on the version the last one confirmed, not on the plan's stale base).
    direct = true;
    return 'go';
  };

  // Whether a staged write of this plan may already be in a draft (then the draft is ours, A10).
  let staged = rj.all().some(
    (e) => RECORD_KINDS.has(e.kind) && (e.status === 'intent' || (e.status === 'done' && (e.result as { status?: string } | null)?.status === 'draft')),
  );

  for (const op of planOperations(run.changeset)) {
    const name = stepName(op);
    let e = rj.get(name);
    if (e?.status === 'done') {
      if (track(op, e.result as { version: number; status: string; publish_denied?: boolean }) === 'stop') return { kind: 'unsent', version: published! };
      continue;
    }
    if (e?.status === 'failed') continue;
    checkpoint(ctx);
    // Issue 11: decided before the intent is journaled, so a write that may not go out leaves no trace of one.
    const binding = sendBinding(ctx, run);
    let res: { version: number; status: WriteResult['status']; etag: string | null; publish_denied?: boolean } | null = null;
    const first = !direct && !staged;
    if (e?.status === 'intent') res = await wasApplied(ctx, plan.id, direct, op, done);
    else {
      // A11: a staged write joins any pending draft; the first one must start our own.
      if (first) await noPendingDraft(ctx);
      e = rj.intent(name, { kind: kindOf(op), idempotencyKey: randomUUID(), bodyHash: bodyHash(op), intent: { record_id: op.record_id } });
    }
    if (!res) {
      try {
        const sent = await send(ctx, run, direct, op, e.idempotencyKey ?? undefined, binding);
        res = { ...sent.value, etag: sent.etag };
      } catch (err) {
        if (hasCode(err, 'OUTCOME_UNKNOWN')) {
          // Issue 4: re-read before re-sending a write whose answer was lost.
          res = await wasApplied(ctx, plan.id, direct, op, done);
          if (!res) {
            const sent = await send(ctx, run, direct, op, e.idempotencyKey ?? undefined, binding);
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
      if (first) await checkNewDraft(ctx, run, res.version, op);
    }
    if (track(op, res) === 'stop') return { kind: 'unsent', version: published! };
  }
  if (published !== null && (direct || legacy) && draft === null) return { kind: 'published', version: published, legacy };
  if (draft !== null) return { kind: 'staged', version: draft, publishDenied };
  return { kind: 'nothing' };
}

async function send(ctx: ExecContext, run: PlanRun, direct: boolean, op: RecordOp, idempotencyKey: string | undefined, binding: { onlyKey?: string }) {
  // If-Match: staged writes against the plan's base; direct writes against the version the last one confirmed.
  const ifMatch = direct ? ctx.store.state().etag : run.plan.baseEtag;
  const opts = {
    ...binding,
    ...(direct ? {} : { publish: false }),
    ...(idempotencyKey ? { idempotencyKey } : {}),
    ...(ifMatch ? { ifMatch } : {}),
  };
  switch (op.op) {
    case 'add':
      return ctx.client.createRecord(op.record, opts);
    case 'change':
      return ctx.client.patchRecord(op.record_id, op.patch, opts);
    case 'delete':
      return ctx.client.deleteRecord(op.record_id, opts);
  }
}

/** The journal kind of a per-record request (post, patch, delete). */
function kindOf(op: RecordOp): 'post' | 'patch' | 'delete' {
  return op.op === 'add' ? 'post' : op.op === 'change' ? 'patch' : 'delete';
}

/**
 * Did a write whose answer was lost take effect? Direct: read the record
 * (GET /records/{id}, A31). Staged: the draft's counts (A19) against the
 * writes already done — sends are sequential, so at most one is unknown.
 */
async function wasApplied(
  ctx: ExecContext,
  planId: string,
  direct: boolean,
  op: RecordOp,
  done: DraftCounts,
): Promise<{ version: number; status: 'published' | 'draft'; etag: string | null } | null> {
  if (direct) {
    let current: DatasetRecord | null = null;
    let etag: string | null = null;
    try {
      const r = await ctx.client.getRecord(op.record_id);
      current = r.value;
      etag = r.etag;
    } catch (err) {
      if (!hasCode(err, 'RECORD_NOT_FOUND')) throw err;
      const ds = await ctx.client.getDataset();
      etag = ds.etag;
      if (op.op === 'delete') return { version: ds.value.active_version, status: 'published', etag };
      return null;
    }
    if (op.op === 'delete') return null;
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
  throw new MixedDraftError(ds.draft_version, planId, counts, [done, after]);
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
async function checkNewDraft(ctx: ExecContext, run: PlanRun, version: number, op: RecordOp): Promise<void> {
  const plan = run.plan;
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
  throw new MixedDraftError(version, plan.id, d.counts, [one]);
}

function bump(c: DraftCounts, op: RecordOp): void {
  if (op.op === 'add') c.added++;
  else if (op.op === 'change') c.changed++;
  else c.deleted++;
}

/** Equal added/changed/deleted counts. */
export function sameCounts(a: DraftCounts, b: DraftCounts): boolean {
  return a.added === b.added && a.changed === b.changed && a.deleted === b.deleted;
}

function bodyHash(op: RecordOp): string {
  return canonicalHash(op.op === 'add' ? op.record : op.op === 'change' ? op.patch : { delete: op.record_id });
}
