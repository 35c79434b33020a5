import type { KeyChannel, KeyShown } from '../../snapshot/types.js';

/** The request path of a plan that sends something (plan.ts SyncPath without none). */
type ApplyPath = 'per_record' | 'replace' | 'import';

/**
 * Issue 11, A12: a legacy key publishes every write at once, even one that asks
 * to stage, and nothing in the API tells a legacy key from another before it
 * answers a write. Whether its replace and upload jobs honour
 * `options.publish: false` is not said at all. So the rule, decided here and
 * nowhere else:
 *
 *   A change that must not go live without a person (a guard holds it, or it is
 *   to be staged only: `--no-publish`) is sent only through a key that has
 *   already shown, on the same kind of request, that it stages: a staged write
 *   answered `status: "draft"`, or a job asked not to publish that ended STAGED
 *   for no guard of the server's. Until then it is kept unsent; `approve` sends
 *   it (with exactly the flags it needs) and `discard` drops it.
 *
 * What a key has shown is kept in the state database per dataset, per key
 * fingerprint (a reissued key shows it again) and per channel (record writes,
 * jobs). A key shows it on a change that may go live anyway: a change within
 * the guards is sent staged, and the answer teaches. Even a change that would
 * have been published directly (`staging: false`, `direct_publish_max_changes`)
 * is sent staged while the key has not shown what it does, once per key: a
 * probe of its own could publish, a staged write of a change that is to be
 * published anyway cannot do harm either way.
 *
 * The rule is pure (planSync applies it); what the key has shown is read and
 * learnt in key-knowledge.ts.
 */

/** The kind of request a plan's change goes out as. */
export function channelOf(path: ApplyPath): KeyChannel {
  return path === 'per_record' ? 'records' : 'jobs';
}

/** What a plan needs for the decision. */
export interface StagingFacts {
  path: ApplyPath;
  /** Why a guard holds it, or null. */
  heldBy?: string | null | undefined;
  stageOnly: boolean;
  approved?: boolean | undefined;
  /** Planned as direct per-record writes. */
  direct: boolean;
}

/** How a plan's change may go out through the key in use. */
export interface StagingDecision {
  /** Keep the change unsent for a person (approve sends it). */
  unsent: boolean;
  /** Per-record writes publish directly (no `publish=false`). */
  direct: boolean;
  /** What the key has or has not shown, for the hold reason, the log and the plan's reason; null when nothing is to say. */
  why: string | null;
}

/** The rule (pure): unsent, staged or direct, from the plan and what the key has shown on its channel. */
export function decideStaging(p: StagingFacts, shown: KeyShown): StagingDecision {
  const mustStayStaged = !p.approved && (!!p.heldBy || p.stageOnly);
  const what = p.path === 'per_record' ? 'record writes' : 'replace and upload jobs';
  if (mustStayStaged && shown !== 'stages') {
    return {
      unsent: true,
      direct: false,
      why:
        shown === 'publishes'
          ? `the key publishes ${what} at once although staging is asked (legacy key, A12)`
          : `the key has not yet shown that it stages ${what} (a legacy key would publish them at once, A12)`,
    };
  }
  if (p.path !== 'per_record') return { unsent: false, direct: false, why: null };
  // A12: every write of this key publishes anyway; direct writes confirm one by one against the moving version.
  if (shown === 'publishes') return { unsent: false, direct: true, why: `the key publishes ${what} at once (legacy key, A12): sent as direct writes` };
  if (shown === null && p.direct) {
    return { unsent: false, direct: false, why: 'sent staged, not directly, this once: the key has not yet shown whether it stages (A12), and its answer tells' };
  }
  return { unsent: false, direct: p.direct, why: null };
}

/** The decision as a suffix of a plan's reason ('' when there is nothing to say). */
export function stagingNote(d: StagingDecision): string {
  if (!d.why) return '';
  return d.unsent ? `; kept unsent until approved: ${d.why}` : `; ${d.why}`;
}

