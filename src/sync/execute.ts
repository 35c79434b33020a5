import { applyPerRecord, type RefusedOp } from './apply-per-record.js';
import { applyImport } from './apply-import.js';
import { applyReplace } from './apply-replace.js';
import type { ExecContext } from './context.js';
import { planLines, removePlan, savePlan, withoutRefused, type ExecPlan } from './exec-plan.js';
import { finishPublished, hold, verifyAndPublish, type PublishEnd } from './publish.js';
import { warnLegacyKey } from './legacy-key.js';
import { checkpoint } from './interrupt.js';
import { stagingOf } from './key-staging.js';
import type { RunJournal } from './run-journal.js';

/** How execute left a plan. */
export type ExecEnd = PublishEnd | { kind: 'nothing'; refused: number };

/**
 * Run a plan from wherever its journal stands: send (per-record or replace),
 * then verify the draft, run the guards on its counts and publish. Used for
 * a fresh plan and for a resumed one alike.
 */
export async function execute(ctx: ExecContext, plan: ExecPlan, rj: RunJournal): Promise<ExecEnd> {
  const refused: RefusedOp[] = [];
  const stage =
    plan.path === 'per_record'
      ? await applyPerRecord(ctx, plan, rj, refused)
      : plan.path === 'import'
        ? await applyImport(ctx, plan, rj)
        : await applyReplace(ctx, plan, rj);
  // The plan file is what approve and a later held-gate publish from: it must not list a refused record.
  if (dropRefused(plan, rj)) savePlan(ctx.planDir, plan);
  if (refused.length) reportRefused(ctx, plan, refused);
  ctx.summary.rowErrors += refused.length;

  if (stage.kind === 'nothing') {
    ctx.db.transaction(() => {
      ctx.store.recordOutcome('failed', { planId: plan.planId, refused: refused.length });
      ctx.db.journal.finishPlan(plan.planId, 'nothing');
    });
    removePlan(ctx.planDir, plan.planId);
    return { kind: 'nothing', refused: refused.length };
  }
  if (stage.kind === 'unsent') return holdUnsent(ctx, plan, stage.version, stagingOf(ctx, plan).why ?? 'the key published a write asked to stage (legacy key, A12)');
  if (stage.kind === 'staged') checkpoint(ctx);
  if (stage.kind === 'published') {
    if (stage.legacy) {
      warnLegacyKey(ctx, { version: stage.version, planId: plan.planId });
      if (plan.heldBy && !plan.approved) {
        // A replace job cannot be stopped half-way: say what went out unheld; later ones stay unsent (run-sync.ts).
        const msg = `published although a guard would have held it (${plan.heldBy}): the key ignores staging`;
        ctx.summary.warnings.push(msg);
        ctx.logger.warn({ event: 'guard.held', kind: 'legacy_published', version: stage.version, reason: plan.heldBy }, msg);
      }
    }
    // Issue 11: the same end as a published draft, so adoptions and the source are confirmed on every path.
    finishPublished(ctx, plan, rj, stage.version);
    return { kind: 'published', version: stage.version };
  }
  return verifyAndPublish(ctx, plan, rj, stage.version, plan.expected, stage.publishDenied);
}

/**
 * Issue 11, A12: keep a change unsent (nothing of it, or the rest after the key
 * published one write of it) for a person: approve sends it, discard drops it.
 * `published`: the version a legacy write already published, if any;
 * `keyWhy`: what the key has (not) shown (key-staging.ts).
 */
export function holdUnsent(ctx: ExecContext, plan: ExecPlan, published: number | null, keyWhy: string): PublishEnd {
  const kind = plan.heldBy ? 'guard' : 'staged';
  const why = plan.heldBy ?? 'staged only (publish=false)';
  const reason = `${why}; ${keyWhy}, so ${published === null ? 'the change is' : 'the rest of the change is'} kept unsent: approve sends it, discard drops it`;
  hold(ctx, plan, kind, null, reason, null);
  ctx.logger.warn(
    { event: 'guard.held', kind: 'unsent', planId: plan.planId, published, reason: why, guards: plan.heldGuards ?? [], requiredFlags: plan.requiredFlags ?? null },
    'change kept unsent for a person',
  );
  return { kind: 'held', held: kind, version: null, reason, evaluation: null };
}

/** Take writes the server refused for sure (422) out of the plan, so counts and confirm match what was sent; true when it changed. */
function dropRefused(plan: ExecPlan, rj: RunJournal): boolean {
  const failed = new Set(
    rj
      .all()
      .filter((e) => e.status === 'failed')
      .map((e) => (e.intent as { name?: string } | null)?.name ?? '')
      .filter((name) => /^(post|patch|delete):/.test(name)),
  );
  if (failed.size === 0) return false;
  const before = plan.expected;
  const c = plan.changeset.counts;
  const of = (kind: string) => [...failed].filter((name) => name.startsWith(`${kind}:`)).length;
  plan.expected = { added: c.adds - of('post'), changed: c.changes - of('patch'), deleted: c.deletes - of('delete') };
  plan.refused = [...failed];
  plan.changeset = withoutRefused(plan.changeset, failed);
  return before.added !== plan.expected.added || before.changed !== plan.expected.changed || before.deleted !== plan.expected.deleted;
}

/** A3: server row errors mapped back to source file lines, in the log and (ctx.refused) the reject file. */
function reportRefused(ctx: ExecContext, plan: ExecPlan, refused: RefusedOp[]): void {
  const lines = planLines(ctx.planDir, plan, refused.map((r) => r.op.id));
  for (const r of refused) {
    const first = r.error.rowErrors[0];
    ctx.refused.push({
      file: plan.file ?? '',
      line: lines.get(r.op.id) ?? 0,
      column: first?.field ?? 'record',
      value: r.op.id,
      reason: `server: ${r.error.code}: ${first?.message ?? r.error.message}`,
      code: 'INVALID_RECORD',
    });
  }
  for (const r of refused.slice(0, 50)) {
    ctx.logger.error(
      {
        event: 'file.rejected', kind: 'server_row_error',
        file: plan.file,
        line: lines.get(r.op.id) ?? null,
        record_id: r.op.id,
        code: r.error.code,
        errors: r.error.rowErrors.map((e) => ({ field: e.field, message: e.message })),
      },
      'server refused a record',
    );
  }
}
