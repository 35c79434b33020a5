import { ConnectorError } from '../../errors.js';
import { event } from '../../log/events.js';
import type { PauseState } from '../../snapshot/dataset-state.js';
import type { ExecContext } from './context.js';
import * as ledger from './ledger.js';

/** The command that takes exports again for a paused dataset (the one a person is told to run). */
export function resumeCommand(dataset: string): string {
  return `dataset-connector resume ${dataset}`;
}

/**
 * Issue 14: the pause in force on the dataset, read under the dataset's lock
 * (so a pause made by another process is seen before anything is sent).
 */
export function pauseOf(ctx: Pick<ExecContext, 'store'>): PauseState | null {
  return ctx.store.paused();
}

/** DATASET_PAUSED: nothing was sent; names the dataset, who paused it and when, and the command to resume (retry: it passes after resume). */
export function pausedError(dataset: string, p: PauseState, what: string): ConnectorError {
  return new ConnectorError(
    'DATASET_PAUSED',
    `${dataset} is paused since ${new Date(p.at).toISOString()} (${p.by}): ${what}; take exports again with ${resumeCommand(dataset)}`,
    { action: 'retry', context: { dataset, paused_since: new Date(p.at).toISOString(), paused_by: p.by } },
  );
}

/**
 * A sync of a paused dataset (every export path passes the engine's sync:
 * `sync`, `retry`, the daemon's file jobs and re-applies, `run --once`):
 * nothing is read or sent; the summary says paused with DATASET_PAUSED.
 * True when it stopped the sync.
 */
export function stopIfPaused(ctx: ExecContext, what: string): boolean {
  const p = pauseOf(ctx);
  if (!p) return false;
  markPaused(ctx, pausedError(ctx.dataset, p, what), {});
  return true;
}

/** The summary says paused, and one sync.skipped line says why. */
function markPaused(ctx: ExecContext, err: ConnectorError, fields: Record<string, unknown>): void {
  Object.assign(ctx.summary, { result: 'paused', code: err.code, action: err.action, message: err.message });
  ctx.logger.warn(event('sync.skipped', { reason: 'paused', code: err.code, paused_since: err.context.paused_since, paused_by: err.context.paused_by, ...fields }), err.message);
}

/**
 * An interrupted plan of a paused dataset is not continued by the daemon
 * (its start, its periodic reconcile): the person who paused may have done
 * so to stop exactly that change. It waits in the journal until resume (or
 * a restore, an explicit action on the dataset, finishes it first). True
 * when a plan waits.
 */
export function openPlanWaits(ctx: ExecContext): boolean {
  const p = pauseOf(ctx);
  const open = p ? ledger.openPlan(ctx) : null;
  if (!p || !open) return false;
  markPaused(ctx, pausedError(ctx.dataset, p, `the interrupted sync (plan ${open.planId}) is not continued`), { planId: open.planId });
  return true;
}
