import { applyPerRecord, type RefusedOp } from './apply-per-record.js';
import { event } from '../../log/events.js';
import { applyImport } from './apply-import.js';
import { applyReplace } from './apply-replace.js';
import type { ExecContext } from './context.js';
import { planLines } from './plan-files.js';
import * as ledger from './ledger.js';
import type { PlanRun } from './plan-run.js';
import { verifyAndPublish, type PublishEnd } from './publish.js';
import { warnLegacyKey } from './legacy-key.js';
import { checkpoint } from './interrupt.js';
import { stagingOf } from './key-knowledge.js';
import type { RunJournal } from './run-journal.js';

/** How execute left a plan. */
export type ExecEnd = PublishEnd | { kind: 'nothing'; refused: number };

/**
 * Run a plan from wherever its journal stands: send (per-record or replace),
 * then verify the draft, run the guards on its counts and publish. Used for
 * a fresh plan and for a resumed one alike.
 */
export async function execute(ctx: ExecContext, start: PlanRun, rj: RunJournal): Promise<ExecEnd> {
  const refused: RefusedOp[] = [];
  const stage =
    start.path === 'per_record'
      ? await applyPerRecord(ctx, start, rj, refused)
      : start.path === 'import'
        ? await applyImport(ctx, start, rj)
        : await applyReplace(ctx, start, rj);
  // Writes the server refused for sure are in the journal: counts, verify, hold and confirm are of what was sent.
  const run = refused.length ? ledger.refresh(start, rj) : start;
  if (refused.length) reportRefused(ctx, run, refused);
  ctx.summary.rowErrors += refused.length;

  if (stage.kind === 'nothing') {
    ledger.refusedAll(ctx, run, refused.length);
    return { kind: 'nothing', refused: refused.length };
  }
  if (stage.kind === 'unsent') return holdUnsent(ctx, run, stage.version, stagingOf(ctx, run).why ?? 'the key published a write asked to stage (legacy key, A12)');
  if (stage.kind === 'staged') checkpoint(ctx);
  if (stage.kind === 'published') {
    if (stage.legacy) {
      warnLegacyKey(ctx, { version: stage.version, planId: run.plan.id });
      if (run.plan.heldBy && !run.approved) {
        // A replace job cannot be stopped half-way: say what went out unheld; later ones stay unsent (planSync).
        const msg = `published although a guard would have held it (${run.plan.heldBy}): the key ignores staging`;
        ctx.summary.warnings.push(msg);
        ctx.logger.warn(event('guard.held', { kind: 'legacy_published', version: stage.version, reason: run.plan.heldBy }), msg);
      }
    }
    // Issue 11: the same end as a published draft, so adoptions and the source are confirmed on every path.
    ledger.published(ctx, run, rj, stage.version);
    return { kind: 'published', version: stage.version };
  }
  return verifyAndPublish(ctx, run, rj, stage.version, stage.publishDenied);
}

/** Why a change is kept unsent (issue 11, A12): `published` the version a legacy write already published, if any; `keyWhy` what the key has (not) shown. */
export function unsentHold(run: Pick<PlanRun, 'plan'>, published: number | null, keyWhy: string): ledger.UnsentHold {
  const kind = run.plan.heldBy ? 'guard' : 'staged';
  const why = run.plan.heldBy ?? 'staged only (publish=false)';
  return { kind, reason: `${why}; ${keyWhy}, so ${published === null ? 'the change is' : 'the rest of the change is'} kept unsent: approve sends it, discard drops it` };
}

/** The log line of a change kept unsent. */
export function logUnsent(ctx: ExecContext, run: Pick<PlanRun, 'plan'>, published: number | null): void {
  const why = run.plan.heldBy ?? 'staged only (publish=false)';
  const guards = run.plan.guards.results.filter((r) => r.holds);
  ctx.logger.warn(event('guard.held', { kind: 'unsent', planId: run.plan.id, published, reason: why, guards, requiredFlags: run.plan.requiredFlags }), 'change kept unsent for a person');
}

/**
 * Issue 11, A12: keep a change unsent (nothing of it, or the rest after the key
 * published one write of it) for a person: approve sends it, discard drops it.
 */
export function holdUnsent(ctx: ExecContext, run: PlanRun, published: number | null, keyWhy: string): PublishEnd {
  const h = unsentHold(run, published, keyWhy);
  ledger.held(ctx, run, h.kind, null, h.reason, null);
  logUnsent(ctx, run, published);
  return { kind: 'held', held: h.kind, version: null, reason: h.reason, evaluation: null };
}

/** A3: server row errors mapped back to source file lines, in the log and (ctx.refused) the reject file. */
function reportRefused(ctx: ExecContext, run: PlanRun, refused: RefusedOp[]): void {
  const plan = run.plan;
  const lines = planLines(ctx.planDir, plan.id, run.legacy, refused.map((r) => r.op.record_id));
  for (const r of refused) {
    const first = r.error.rowErrors[0];
    ctx.refused.push({
      file: plan.file ?? '',
      line: lines.get(r.op.record_id) ?? 0,
      column: first?.field ?? 'record',
      value: r.op.record_id,
      reason: `server: ${r.error.code}: ${first?.message ?? r.error.message}`,
      code: 'INVALID_RECORD',
    });
  }
  for (const r of refused.slice(0, 50)) {
    ctx.logger.error(
      event('file.rejected', {
        kind: 'server_row_error',
        file: plan.file,
        line: lines.get(r.op.record_id) ?? null,
        record_id: r.op.record_id,
        code: r.error.code,
        errors: r.error.rowErrors.map((e) => ({ field: e.field, message: e.message })),
      }),
      'server refused a record',
    );
  }
}
