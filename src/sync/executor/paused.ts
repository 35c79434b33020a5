import { ConnectorError } from '../../errors.js';
import { event } from '../../log/events.js';
import type { PauseState } from '../../snapshot/dataset-state.js';
import { FeedPauses } from '../../snapshot/feed-pauses.js';
import type { ExecContext } from './context.js';
import * as ledger from './ledger.js';

/** The command that takes exports again for a paused dataset (the one a person is told to run). */
export function resumeCommand(dataset: string): string {
  return `dataset-connector resume ${dataset}`;
}

/** The command that takes one feed's exports again (`pause <dataset> --feed F`). */
export function resumeFeedCommand(dataset: string, feed: string): string {
  return `dataset-connector resume ${dataset} --feed ${feed}`;
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

/** FEED_PAUSED: one feed of the dataset is paused; names the feed, who paused it and when, and the command to resume it (retry: it passes after resume). */
export function feedPausedError(dataset: string, feed: string, p: PauseState, what: string): ConnectorError {
  return new ConnectorError(
    'FEED_PAUSED',
    `feed ${feed} of ${dataset} is paused since ${new Date(p.at).toISOString()} (${p.by}): ${what}; take its exports again with ${resumeFeedCommand(dataset, feed)}`,
    { action: 'retry', context: { dataset, feed, paused_since: new Date(p.at).toISOString(), paused_by: p.by } },
  );
}

/** The feeds of `feeds` paused now, with their pause (read under the dataset's lock, like the dataset's own pause). */
export function pausedFeeds(ctx: Pick<ExecContext, 'db' | 'dataset'>, feeds: readonly string[]): Array<{ feed: string; pause: PauseState }> {
  const pauses = new FeedPauses(ctx.db.conn, ctx.dataset);
  return feeds.flatMap((feed) => {
    const pause = pauses.paused(feed);
    return pause ? [{ feed, pause }] : [];
  });
}

/**
 * A sync of a paused feed's files (`sync --feed F`, the daemon's file job of
 * that feed): nothing is read or sent; the summary says paused with
 * FEED_PAUSED. True when it stopped the sync.
 */
export function stopIfFeedPaused(ctx: ExecContext, feeds: readonly string[], what: string): boolean {
  const [first] = pausedFeeds(ctx, feeds);
  if (!first) return false;
  markPaused(ctx, feedPausedError(ctx.dataset, first.feed, first.pause, what), { feed: first.feed });
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
