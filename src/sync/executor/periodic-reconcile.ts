import type { ExecContext } from './context.js';
import { settleHeld } from './held-gate.js';
import { reconcile, type ServerView } from './reconcile.js';
import { resumeOpenPlan } from './resume.js';
import { event } from '../../log/events.js';

/**
 * The daemon's periodic reconcile: first finish what is in flight (an open
 * plan is resumed; a held change a person published is confirmed as ours),
 * then rebuild the snapshot from the server. Rebuilding first would read the
 * connector's own unconfirmed change back as someone else's edit (issue 7).
 * A resume that fails throws: the rebuild waits for the next run. While
 * `planWaits` (the dataset paused with a plan open, issue 14) neither runs:
 * the plan is not continued, and a rebuild would take its writes for
 * someone else's.
 */
export async function periodicReconcile(ctx: ExecContext, planWaits: () => boolean = () => false): Promise<ServerView> {
  if (planWaits()) {
    const { value } = await ctx.client.getDataset();
    return { dataset: value, etag: `"v${value.active_version}"`, rebuilt: null };
  }
  const resumed = await resumeOpenPlan(ctx);
  if (resumed) ctx.logger.info(event('reconcile.started', { kind: 'after_resume', planId: resumed.planId }), 'finished an interrupted sync before reconciling');
  await settleHeld(ctx, (await ctx.client.getDataset()).value);
  return reconcile(ctx, true);
}
