import { randomUUID } from 'node:crypto';
import type { PublishOptions } from '../../api/wire.js';
import { ApiError } from '../../api/errors.js';
import { ConnectorError } from '../../errors.js';
import type { HeldDraft } from '../../snapshot/types.js';
import { sameCounts } from './apply-per-record.js';
import type { ExecContext } from './context.js';
import * as ledger from './ledger.js';
import type { DraftCounts } from '../core/plan.js';
import type { PlanRun } from './plan-run.js';
import { ImportNotEquivalentError } from './apply-import.js';
import { canonicalJson } from '../../model/canonical.js';
import type { VersionDetail } from '../../api/wire.js';
import { evaluateGuards, guardCountsOfDraft, type GuardEvaluation } from '../core/guards.js';
import type { RunJournal } from './run-journal.js';
import { withValueGuards } from '../core/value-guards.js';
import { MixedDraftError, onlyOurs, sentCounts } from './drafts.js';
import { checkpoint } from './interrupt.js';
import { event } from '../../log/events.js';
import { feedPausedError, pausedError, pausedFeeds, pauseOf } from './paused.js';

/** How the publish step ended. */
export type PublishEnd =
  | { kind: 'published'; version: number }
  /** `version` null: nothing of it is pending on the server (kept unsent, A12). */
  | { kind: 'held'; held: HeldDraft['kind']; version: number | null; reason: string; evaluation: GuardEvaluation | null };

/** The guards against a draft's counts (issue 4: checked again before publishing). */
export function draftGuards(ctx: ExecContext, run: PlanRun, counts: DraftCounts): GuardEvaluation {
  const plan = run.plan;
  // Issue 13: a feed's missing strategy is counted by the plan (a draft's counts do not tell it from other changes).
  // An update feed's file is no catalogue: the row-drop guard compares catalogues only.
  const rows = plan.feed && plan.feed.role !== 'full' ? undefined : plan.source?.rowCount;
  const gc = { ...guardCountsOfDraft(counts, plan.baseCount, plan.counts.deletable, rows), missing: plan.feed?.missing, emptyWhy: plan.rowsNote };
  // Issue 14: the value guards from the plan's own tally (a draft's counts say nothing of values).
  const c = plan.counts;
  return withValueGuards(evaluateGuards(gc, ctx.store.state(), ctx.policy), plan.changeset.values, c.changes + c.unchanged, ctx.policy.guards.values);
}

/**
 * Check the draft (A19) against the plan, run the guards on its counts, then
 * publish it (A20). The snapshot advances in the same transaction that marks
 * the publish done. A guard, a key without the publish role, or the server's
 * own guard (A5) leaves the draft pending and recorded as held.
 */
export async function verifyAndPublish(ctx: ExecContext, run: PlanRun, rj: RunJournal, version: number, publishDenied: boolean): Promise<PublishEnd> {
  const plan = run.plan;
  const expected = run.expected;
  const detail = (await ctx.client.getVersion(version)).value;
  if (detail.status === 'active' || detail.status === 'superseded') {
    // Our publish went through before the answer was recorded (resume).
    ledger.published(ctx, run, rj, version);
    return { kind: 'published', version };
  }
  if (detail.status === 'expired') {
    throw new ConnectorError('DRAFT_EXPIRED', `Draft ${version} expired before it was published.`, { action: 'retry', context: { version } });
  }
  if (detail.status !== 'draft') {
    throw new ConnectorError('DRAFT_GONE', `Draft ${version} is ${detail.status}.`, { action: 'retry', context: { version } });
  }
  if (run.path === 'import') checkImportedDraft(run, version, detail);
  if (!sameCounts(detail.counts, expected)) {
    // Someone else's change is in the draft: a person decides, it is never discarded here.
    if (!onlyOurs(detail.counts, rj)) throw new MixedDraftError(version, plan.id, detail.counts, sentCounts(rj));
    // Issue 7: the carried-over records or the base changed under us; re-read and plan again.
    throw new ConnectorError('DRAFT_MISMATCH', `Draft ${version} counts differ from the plan.`, {
      action: 'retry',
      context: { version, draft: detail.counts, expected },
    });
  }
  if (!rj.get('verify')) {
    rj.intent('verify', { kind: 'verify', draftVersion: version });
    rj.done('verify', detail.counts);
    rj.committed('verify');
  }
  const evaluation = draftGuards(ctx, run, detail.counts);
  if (run.approved) {
    // A person approved this held change: exactly the flags it needs, nothing else (issue 4).
    if (publishDenied) return portalPublish(ctx, run, version);
    return publishDraft(ctx, run, rj, version, evaluation.requiredFlags);
  }
  ctx.summary.guards = { held: evaluation.holds, reasons: evaluation.results.filter((r) => r.holds).map((r) => r.message) };
  if (evaluation.holds) {
    const reason = evaluation.results.filter((r) => r.holds).map((r) => `${r.guard}: ${r.message}`).join('; ');
    ledger.held(ctx, run, 'guard', version, reason, evaluation);
    ctx.logger.warn(event('guard.held', { version, counts: detail.counts, guards: evaluation.results, requiredFlags: evaluation.requiredFlags }), 'guard held the change');
    return { kind: 'held', held: 'guard', version, reason, evaluation };
  }
  const paused = pausedNow(ctx, run);
  if (paused) {
    // Paused while this sync ran: the staged change waits for a person instead of going out.
    ledger.held(ctx, run, 'staged', version, paused, evaluation);
    ctx.logger.warn(event('sync.skipped', { reason: 'paused', kind: 'paused_before_publish', version, planId: plan.id }), paused);
    return { kind: 'held', held: 'staged', version, reason: paused, evaluation };
  }
  if (publishDenied) return portalPublish(ctx, run, version);
  if (plan.stageOnly) {
    const reason = 'staged only (publish=false): publish with dataset-connector approve or in the portal';
    ledger.held(ctx, run, 'staged', version, reason, evaluation);
    return { kind: 'held', held: 'staged', version, reason, evaluation };
  }
  return publishDraft(ctx, run, rj, version, evaluation.connectorFlags);
}

/**
 * A pause made while the sync ran (of the dataset, or of a feed the plan is
 * made of), read again right before publishing: why the staged change is held
 * then, or null. A restore publishes though (a person asked for it).
 */
function pausedNow(ctx: ExecContext, run: PlanRun): string | null {
  const plan = run.plan;
  if (plan.restore) return null;
  const keep = 'the staged change is held: dataset-connector approve publishes it, discard drops it; after resume the next export replaces it';
  const p = pauseOf(ctx);
  if (p) return `${pausedError(ctx.dataset, p, 'paused while this sync ran, before it published').message}; ${keep}`;
  const feeds = plan.batch?.length ? plan.batch.map((f) => f.name) : plan.feed ? [plan.feed.name] : [];
  const [f] = pausedFeeds(ctx, [...new Set(feeds)]);
  return f ? `${feedPausedError(ctx.dataset, f.feed, f.pause, 'paused while this sync ran, before it published').message}; ${keep}` : null;
}

/** POST /versions/{v}/publish with exactly `flags`, journaled; confirms the snapshot on 200. */
export async function publishDraft(
  ctx: ExecContext,
  run: PlanRun,
  rj: RunJournal,
  version: number,
  flags: PublishOptions,
  stepName = 'publish',
): Promise<PublishEnd> {
  const sent = pickTrue(flags);
  checkpoint(ctx);
  const step =
    rj.get(stepName) ?? rj.intent(stepName, { kind: 'publish', idempotencyKey: randomUUID(), draftVersion: version, intent: { flags: sent } });
  try {
    await ctx.client.publishVersion(version, sent, { idempotencyKey: step.idempotencyKey! });
    // A key once refused a publish has been given the role: plans say the connector publishes again.
    ctx.store.notePublish(ctx.client.keyId, false);
  } catch (err) {
    if (err instanceof ApiError && (err.code === 'PUBLISH_REQUIRED' || err.code === 'FORBIDDEN')) {
      rj.failed(stepName, { code: err.code });
      return portalPublish(ctx, run, version);
    }
    if (err instanceof ApiError && (err.code === 'MASS_DELETE_GUARD' || err.code === 'EMPTY_RESULT_GUARD')) {
      // A5: the server's own guard; a person approves with the matching flag.
      rj.failed(stepName, { code: err.code });
      const evaluation = draftGuards(ctx, run, run.expected);
      ledger.held(ctx, run, 'guard', version, `server refused: ${err.code}`, evaluation);
      ctx.logger.warn(event('guard.held', { version, code: err.code, requiredFlags: evaluation.requiredFlags }), 'server guard held the change');
      return { kind: 'held', held: 'guard', version, reason: err.code, evaluation };
    }
    throw err;
  }
  ledger.published(ctx, run, rj, version, stepName);
  return { kind: 'published', version };
}

/** The key cannot publish: leave the draft for a person in the portal, once, without looping. */
function portalPublish(ctx: ExecContext, run: PlanRun, version: number): PublishEnd {
  const reason = 'the key has no publish role: a person must publish this draft in the portal';
  ledger.held(ctx, run, 'publish_required', version, reason, null);
  ctx.logger.warn(event('sync.staged', { kind: 'publish_required', version }), 'draft staged; a person must publish it in the portal');
  return { kind: 'held', held: 'publish_required', version, reason, evaluation: null };
}

function pickTrue(flags: PublishOptions): PublishOptions {
  const out: PublishOptions = {};
  if (flags.allow_mass_delete) out.allow_mass_delete = true;
  if (flags.allow_empty) out.allow_empty = true;
  return out;
}

/**
 * An uploaded file's draft must be what the plan expected: the same counts
 * (A19) and, in its sample of the first changes, the very records the
 * connector made. Otherwise the server read the file differently.
 */
function checkImportedDraft(run: PlanRun, version: number, detail: VersionDetail): void {
  // Only the sampled records are looked up (one pass over the changeset), never the whole changeset held.
  const want = new Map<string, string>();
  const c = run.changeset;
  const find = <T>(op: string, list: Iterable<T>, id: (x: T) => string, text: (x: T) => string): void => {
    const ids = new Set(detail.sample.filter((e) => e.op === op).map((e) => e.record.record_id));
    if (ids.size === 0) return;
    let found = 0;
    for (const x of list) {
      if (!ids.has(id(x))) continue;
      want.set(`${op}:${id(x)}`, text(x));
      if (++found === ids.size) return; // the sample is the first changes in record_id order: found early
    }
  };
  find('add', c.adds, (r) => r.record_id, (r) => canonicalJson(r));
  find('change', c.changes, (ch) => ch.record_id, (ch) => canonicalJson(ch.record));
  find('delete', c.deletes, (d) => d.record_id, () => '');
  const differs =
    !sameCounts(detail.counts, run.expected) ||
    detail.sample.some((e) => {
      const w = want.get(`${e.op}:${e.record.record_id}`);
      return w === undefined || (e.op !== 'delete' && w !== canonicalJson(e.record));
    });
  if (differs) {
    throw new ImportNotEquivalentError(`The upload's draft ${version} differs from the plan: sending the records instead.`, {
      version,
      draft: detail.counts,
      expected: run.expected,
    });
  }
}
