import type { Job } from '../../api/wire.js';
import { ConnectorError } from '../../errors.js';
import type { ExecContext } from './context.js';
import { channelOf, decideStaging, type StagingDecision } from '../core/key-staging.js';
import type { PlanKey } from '../core/plan.js';
import type { PlanRun } from './plan-run.js';

/** What the key in use is known to do (issue 11, A12): the planner's key input, read from the state database. */
export function keyOf(ctx: ExecContext, roles: PlanKey['roles']): PlanKey {
  const keyId = ctx.client.keyId;
  return { roles, shown: { records: ctx.store.keyShown(keyId, 'records'), jobs: ctx.store.keyShown(keyId, 'jobs') } };
}

/** The rule applied to a running plan with the key in use now (approved, it may go out through any key). */
export function stagingOf(ctx: ExecContext, run: PlanRun, approved = run.approved): StagingDecision {
  const p = run.plan;
  return decideStaging({ path: run.path, heldBy: p.heldBy, stageOnly: p.stageOnly, approved, direct: p.direct }, ctx.store.keyShown(ctx.client.keyId, channelOf(run.path)));
}

/**
 * Right before a request of `plan` is sent (fresh, resumed or approved): the
 * key to bind it to (HttpRequest.onlyKey) when it must stay staged, so a key
 * read again after a 401 does not send it unproven. Throws KEY_NOT_SHOWN_STAGING
 * (plan again) when the key in use has not shown that it stages, e.g. a plan
 * resumed after the key was replaced.
 */
export function sendBinding(ctx: ExecContext, run: PlanRun): { onlyKey?: string } {
  if (run.approved || (!run.plan.heldBy && !run.plan.stageOnly)) return {};
  const d = stagingOf(ctx, run);
  if (d.unsent) {
    throw new ConnectorError('KEY_NOT_SHOWN_STAGING', `not sent: ${d.why}`, { action: 'retry', context: { dataset: ctx.dataset, planId: run.plan.id } });
  }
  return { onlyKey: ctx.client.keyId };
}

/** Learn from the answer to a record write sent with `publish=false` (call in the transaction that records it). */
export function learnFromWrite(ctx: ExecContext, status: 'draft' | 'published'): void {
  ctx.store.noteKeyShown(ctx.client.keyId, 'records', status === 'draft' ? 'stages' : 'publishes');
}

/** A5: a job the server's own guard stopped as a draft shows nothing about `options.publish`. */
const SERVER_GUARD_REASONS = new Set(['MASS_DELETE_GUARD', 'EMPTY_RESULT_GUARD']);

/**
 * Learn from a job that ended after the key `keyId` sent it with
 * `options.publish: false` (call in the transaction that records it).
 */
export function learnFromJob(ctx: ExecContext, keyId: string, job: Job): void {
  if (job.status === 'PUBLISHED') ctx.store.noteKeyShown(keyId, 'jobs', 'publishes');
  else if (job.status === 'STAGED' && !SERVER_GUARD_REASONS.has(job.reason ?? '')) ctx.store.noteKeyShown(keyId, 'jobs', 'stages');
}
