import type { ExecContext } from './context.js';
import * as ledger from './ledger.js';
import { event } from '../../log/events.js';

/** How long finished plans and their journal steps are kept: status shows them, and drafts of ours are recognised by them (well past a draft's 24 hours). */
export const FINISHED_PLAN_KEEP_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * After a sync: delete the dataset's plans finished more than
 * FINISHED_PLAN_KEEP_MS ago, their journal steps and any plan file left of
 * them, so the state db does not grow without end. A held change's plan is
 * kept (approve works from it). Best effort: a failure is logged, not raised.
 */
export function pruneJournal(ctx: ExecContext): void {
  try {
    const ids = ledger.prune(ctx, ctx.db.clock.now() - FINISHED_PLAN_KEEP_MS);
    if (ids.length) ctx.logger.debug(event('sync.progress', { kind: 'journal_pruned', plans: ids.length }), 'old finished plans removed from the journal');
  } catch (err) {
    ctx.logger.warn(event('sync.progress', { kind: 'journal_prune_failed', err }), 'old finished plans could not be removed from the journal');
  }
}
