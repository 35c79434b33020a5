import type { HeldDraft } from '../../snapshot/types.js';
import type { SyncResult } from '../outcome.js';

/**
 * The held gate, decided once (issue 12): what a sync does before planning
 * about a held change or a pending draft. Pure: the facts come from the
 * server and the state db at the edge. `sync` acts on each step
 * (executor/held-gate.ts heldGate); `plan` only follows them (heldGateVerdict),
 * so the two cannot disagree.
 */

/** Why a sync stops before planning: a held change or a foreign draft. */
export interface GateStop {
  result: SyncResult;
  code: string;
  message: string;
}

/** What the gate decides on. */
export interface GateFacts {
  /** The held change once settled with the server (heldFate): null when none, published or gone. */
  held: HeldDraft | null;
  /** The dataset's pending draft, or null. */
  draftVersion: number | null;
  /** The content hash of the export about to be planned. */
  fileHash: string | null;
  /** When draftVersion was made by a closed plan of ours (a sync stopped after staging): that plan. */
  orphanPlan: string | null;
  /** When draftVersion was made by the connector's open plan (a sync that stopped before publishing; the next sync resumes it): that plan. */
  openPlan: string | null;
  onForeignDraft: 'wait' | 'discard';
  /** The feed whose file is about to be planned, for a dataset of several feeds (issue 13). */
  feed?: GateFeed | null;
}

/** A feed's file at the gate (issue 13): its feed, the dataset's primary feed (a held change without a feed is its), the dataset. */
export interface GateFeed {
  name: string;
  primary: string;
  dataset: string;
}

/** Which file a sync reads: its content hash and, for a dataset of several feeds, its feed. */
export interface GateFile {
  fileHash: string | null;
  feed: GateFeed | null;
}

/**
 * Issue 13: a held change of one feed is never replaced by a file of another
 * (a person has not seen it); that file waits, kept, until approve or discard.
 */
function otherFeedStop(held: HeldDraft, feed: GateFeed | null | undefined): GateStop | null {
  if (!feed) return null;
  const heldFeed = (held.summary as { feed?: string } | null)?.feed ?? feed.primary;
  if (heldFeed === feed.name) return null;
  return {
    result: 'waiting',
    code: 'HELD_OTHER_FEED',
    message:
      `a change of feed "${heldFeed}" waits for a person (${held.reason}): approve it (dataset-connector approve ${feed.dataset}) or discard it ` +
      `(dataset-connector discard ${feed.dataset}); this file of feed "${feed.name}" is kept and synced after that`,
  };
}

/** One step of the gate; after `replace_held` the gate is asked again, without the held change. */
export type GateStep =
  /** Stop before planning. */
  | { step: 'stop'; stop: GateStop }
  /** A newer export replaces the held change: its draft (if any) is discarded and it is forgotten. */
  | { step: 'replace_held'; held: HeldDraft }
  /** A draft our closed plan left: discarded when it holds only what that plan sent, else held as mixed. */
  | { step: 'settle_orphan'; planId: string; version: number }
  /** The draft of our open plan: ours, never foreign; a sync finishes that plan (resumeOpenPlan) before it plans anew. */
  | { step: 'finish_open'; planId: string; version: number }
  /** Someone else's draft: discarded (on_foreign_draft: discard, stop null) or held and reported (stop). */
  | { step: 'foreign_draft'; version: number; stop: GateStop | null }
  /** Nothing blocks: plan (forgetting a held foreign draft that is gone). */
  | { step: 'plan'; clearForeign: boolean };

/** A held foreign draft that also holds the connector's writes (executor/drafts.ts holdMixed). */
export function isMixed(summary: unknown): boolean {
  return (summary as { mixed?: unknown } | null)?.mixed === true;
}

/** Why a sync waits on a draft the connector did not make. */
export function foreignDraftMessage(version: number): string {
  return `draft ${version} was not made by the connector; waiting for a person to publish or discard it (on_foreign_draft: wait)`;
}

/** What a sync does first when the connector's own plan is still open (its draft pending or not yet made). */
export function openPlanMessage(planId: string, version: number | null): string {
  return `a sync would first finish the open plan ${planId} (${version === null ? 'no draft yet' : `draft ${version}`}): it sends and publishes what that plan holds, then plans this export against the dataset that gives; that plan cannot be known without sending, so none is printed`;
}

/**
 * True when a held change must be settled with the server before the gate:
 * a draft of ours (or a mixed one) that is not the dataset's pending draft
 * any more. A change kept unsent (A12) and a plain foreign draft never are.
 */
export function heldAwaitsServer(held: HeldDraft | null, draftVersion: number | null): held is HeldDraft & { version: number } {
  return held !== null && held.version !== null && (held.kind !== 'foreign_draft' || isMixed(held.summary)) && held.version !== draftVersion;
}

/** What became of such a draft, from its version's status: published (by approve or in the portal), still pending, or gone (expired, discarded). */
export function heldFate(status: string | null): 'published' | 'pending' | 'gone' {
  if (status === 'active' || status === 'superseded') return 'published';
  return status === 'draft' ? 'pending' : 'gone';
}

/**
 * The next step of the gate:
 * - a held change of ours: a file of another feed waits (issue 13); the same export stays held; a newer one replaces it;
 * - a draft holding our writes and someone else's: wait for a person, whatever on_foreign_draft says;
 * - no pending draft: plan;
 * - the draft of our open plan: ours, finish that plan first;
 * - an orphan of a closed plan of ours: settle it;
 * - a draft we did not make: on_foreign_draft wait (stop) or discard.
 */
export function gateStep(f: GateFacts): GateStep {
  const { held } = f;
  if (held && held.kind !== 'foreign_draft') {
    const other = otherFeedStop(held, f.feed);
    if (other) return { step: 'stop', stop: other };
    const same = f.fileHash !== null && (held.summary as { fileHash?: string | null } | null)?.fileHash === f.fileHash;
    if (!same) return { step: 'replace_held', held };
    return { step: 'stop', stop: { result: held.kind === 'guard' ? 'held' : 'staged', code: `HELD_${held.kind.toUpperCase()}`, message: held.reason } };
  }
  if (held && held.version !== null && isMixed(held.summary)) {
    return { step: 'stop', stop: { result: 'waiting', code: 'DRAFT_MIXED', message: held.reason } };
  }
  if (f.draftVersion === null) return { step: 'plan', clearForeign: held?.kind === 'foreign_draft' };
  if (f.openPlan !== null) return { step: 'finish_open', planId: f.openPlan, version: f.draftVersion };
  if (f.orphanPlan !== null) return { step: 'settle_orphan', planId: f.orphanPlan, version: f.draftVersion };
  const stop = f.onForeignDraft === 'discard' ? null : { result: 'waiting' as const, code: 'DRAFT_PENDING', message: foreignDraftMessage(f.draftVersion) };
  return { step: 'foreign_draft', version: f.draftVersion, stop };
}
