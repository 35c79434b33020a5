import type { Changeset } from '../core/changeset.js';
import type { LegacyRunFacts } from './plan-files.js';
import { withoutRefused } from './plan-files.js';
import type { ApplyPath, DraftCounts, SyncPlan } from '../core/plan.js';
import type { RunJournal } from './run-journal.js';

/**
 * A plan as it runs: the plan (never changed once made) with what its journal
 * says happened to it so far. Derived again from the journal whenever needed,
 * never saved: the journal is the one record of a plan's life (ledger.ts).
 */
export interface PlanRun {
  readonly plan: SyncPlan;
  readonly path: ApplyPath;
  /** The plan's changeset without the writes the server refused for sure (422): what counts, verify and confirm are of. */
  readonly changeset: Changeset;
  /** A person approved this held change: sent and published with `plan.requiredFlags`, the guards not asked again. */
  readonly approved: boolean;
  /** Per-record writes publish directly: the plan's decision, or the one taken when it was approved. */
  readonly direct: boolean;
  /** What the draft is to hold: the plan's counts less the refused writes. */
  readonly expected: DraftCounts;
  /** Journal step names (`post:<id>`…) of the writes the server refused for sure. */
  readonly refused: readonly string[];
  /** Facts a plan file from before issue 12 carried itself. */
  readonly legacy: LegacyRunFacts | null;
  /** An import plan's upload copy was made and checked against `plan.upload.sha256` by this process (ledger.begin): not hashed again before it is sent. */
  readonly uploadChecked?: true;
}

const RECORD_STEP = /^(post|patch|delete):/;

/** The run of `plan` as its journal `rj` stands. */
export function runOf(plan: SyncPlan, changeset: Changeset, legacy: LegacyRunFacts | null, rj: RunJournal): PlanRun {
  if (plan.path === 'none') throw new TypeError(`plan ${plan.id} sends nothing: it has no run`);
  const refused = new Set(legacy?.refused ?? []);
  for (const e of rj.all()) {
    const name = (e.intent as { name?: string } | null)?.name ?? '';
    if (e.status === 'failed' && RECORD_STEP.test(name)) refused.add(name);
  }
  const approval = rj.get('approve');
  const approved = approval?.status === 'done' || legacy?.approved === true;
  const direct = (approval?.result as { direct?: boolean } | null)?.direct ?? plan.direct;
  const c = plan.counts;
  const of = (kind: string) => [...refused].filter((name) => name.startsWith(`${kind}:`)).length;
  return {
    plan,
    path: plan.path,
    changeset: withoutRefused(changeset, refused),
    approved,
    direct,
    expected: refused.size ? { added: c.adds - of('post'), changed: c.changes - of('patch'), deleted: c.deletes - of('delete') } : plan.expected,
    refused: [...refused],
    legacy,
  };
}
