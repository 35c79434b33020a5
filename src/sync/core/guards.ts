import type { ChangesetCounts } from './changeset.js';
import type { Policy } from '../../config/policy.js';

/** The guards of issue 4, in the order they are reported. */
export type GuardName =
  | 'max_delete_ratio'
  | 'max_deletes'
  | 'min_records'
  | 'empty_result'
  | 'max_row_drop_ratio'
  // Issue 13: an update feed's missing-record strategy (set, deactivate), guarded like deletes.
  | 'missing_ratio'
  | 'missing_count'
  // Issue 14 (value-guards.ts): shares of compared records whose value of `field` changes, goes to zero or empty, or jumps.
  | 'value_changed_ratio'
  | 'value_zeroed_ratio'
  | 'value_jump_ratio';

/** The numbers a guard looks at: from a changeset before sending, or from a draft's counts (A19) before publishing. */
export interface GuardCounts {
  /** Records the change deletes. */
  deletes: number;
  /** Base of the delete ratio: records the connector may delete (owned; all in ownership: full). */
  deletable: number;
  /** Records in the active version now (the server's base for A5). */
  base: number;
  /** Records after the change. */
  result: number;
  /** Rows of this export, for the row-drop guard; absent skips it. */
  sourceRows?: number | undefined;
  /** An update feed's missing strategy: records it changes of those it may change (issue 13); absent skips it. */
  missing?: { count: number; base: number; strategy: string } | undefined;
  /** Why the result may be empty (a feed's rows took no row of the file), said by the empty_result guard. */
  emptyWhy?: string | undefined;
}

/** One guard's verdict with its numbers. */
export interface GuardResult {
  guard: GuardName;
  /** It would keep the change for a person. */
  holds: boolean;
  /** It would hold, but the policy explicitly allows it (allow_mass_delete / allow_empty). */
  allowedByPolicy: boolean;
  value: number;
  limit: number | null;
  message: string;
  /** Value guards: the field, how many records tripped it of how many compared, and the first few (old → new). */
  field?: string;
  count?: number;
  compared?: number;
  samples?: Array<{ record_id: string; old: unknown; new: unknown }>;
}

/** Every guard's verdict plus the publish flags the server will demand (A5). */
export interface GuardEvaluation {
  holds: boolean;
  results: GuardResult[];
  /** Flags the server needs to publish this change (A5: over half deleted, or empty). A person's approve sends these. */
  requiredFlags: { allow_mass_delete: boolean; allow_empty: boolean };
  /** Flags the connector sends on its own: required and explicitly allowed by the policy. */
  connectorFlags: { allow_mass_delete: boolean; allow_empty: boolean };
}

/** Guard counts of a changeset. */
export function guardCountsOf(counts: ChangesetCounts, sourceRows?: number): GuardCounts {
  return { deletes: counts.deletes, deletable: counts.deletable, base: counts.snapshot, result: counts.result, sourceRows };
}

/** Guard counts of a draft's version detail (A19), for the check before publishing. */
export function guardCountsOfDraft(
  draft: { added: number; changed: number; deleted: number },
  base: number,
  deletable: number,
  sourceRows?: number,
): GuardCounts {
  return { deletes: draft.deleted, deletable, base, result: base + draft.added - draft.deleted, sourceRows };
}

/** Evaluate every guard (pure). Used by the planner and again by the engine against the draft's counts. */
export function evaluateGuards(
  counts: GuardCounts,
  snapshotInfo: { lastSource?: { rowCount: number } | null },
  policy: Policy,
): GuardEvaluation {
  const g = policy.guards;
  const results: GuardResult[] = [];

  results.push(
    ...deleteLimits(g, ['max_delete_ratio', 'max_deletes'], counts.deletes, counts.deletable, {
      ratio: (r) => `deletes ${counts.deletes} of ${counts.deletable} deletable records (${pct(r)}; limit ${pct(g.max_delete_ratio)})`,
      count: () => `deletes ${counts.deletes} records (limit ${g.max_deletes})`,
    }),
  );

  if (g.min_records > 0) {
    results.push({
      guard: 'min_records',
      holds: counts.result < g.min_records,
      allowedByPolicy: false,
      value: counts.result,
      limit: g.min_records,
      message: `leaves ${counts.result} records (minimum ${g.min_records})`,
    });
  }

  const empty = counts.result === 0 && counts.base > 0;
  results.push({
    guard: 'empty_result',
    holds: empty && !g.allow_empty,
    allowedByPolicy: empty && g.allow_empty,
    value: counts.result,
    limit: null,
    message: empty ? `leaves no records (the dataset has ${counts.base})${counts.emptyWhy ? `: ${counts.emptyWhy}` : ''}` : `leaves ${counts.result} records`,
  });

  const last = snapshotInfo.lastSource?.rowCount;
  if (g.max_row_drop_ratio !== undefined && last !== undefined && last > 0 && counts.sourceRows !== undefined) {
    const drop = Math.max(0, (last - counts.sourceRows) / last);
    results.push({
      guard: 'max_row_drop_ratio',
      holds: drop > g.max_row_drop_ratio,
      allowedByPolicy: false,
      value: round(drop),
      limit: g.max_row_drop_ratio,
      message: `export has ${counts.sourceRows} rows, the last had ${last} (drop ${pct(drop)}; limit ${pct(g.max_row_drop_ratio)})`,
    });
  }

  const m = counts.missing;
  if (m && m.count > 0) {
    // Guarded like deletes: the same limits, over the records the feed may change.
    results.push(
      ...deleteLimits(g, ['missing_ratio', 'missing_count'], m.count, m.base, {
        ratio: (r) => `missing: ${m.strategy} changes ${m.count} of ${m.base} records the file does not list (${pct(r)}; limit ${pct(g.max_delete_ratio)}, max_delete_ratio)`,
        count: () => `missing: ${m.strategy} changes ${m.count} records the file does not list (limit ${g.max_deletes}, max_deletes)`,
      }),
    );
  }

  // A5: the server refuses more than half of its records deleted, or zero left when it had any.
  const requiredFlags = { allow_mass_delete: counts.deletes * 2 > counts.base && counts.deletes > 0, allow_empty: empty };
  return {
    holds: results.some((r) => r.holds),
    results,
    requiredFlags,
    connectorFlags: {
      allow_mass_delete: requiredFlags.allow_mass_delete && g.allow_mass_delete,
      allow_empty: requiredFlags.allow_empty && g.allow_empty,
    },
  };
}

/** A share guard (max_delete_ratio) and a count guard (max_deletes) over `count` of `base`; allow_mass_delete lets both pass. */
function deleteLimits(
  g: Policy['guards'],
  names: [GuardName, GuardName],
  count: number,
  base: number,
  say: { ratio: (share: number) => string; count: () => string },
): GuardResult[] {
  const massOk = g.allow_mass_delete;
  const share = base > 0 ? count / base : 0;
  const over = share > g.max_delete_ratio;
  const out: GuardResult[] = [
    { guard: names[0], holds: over && !massOk, allowedByPolicy: over && massOk, value: round(share), limit: g.max_delete_ratio, message: say.ratio(share) },
  ];
  if (g.max_deletes !== undefined) {
    const overCount = count > g.max_deletes;
    out.push({ guard: names[1], holds: overCount && !massOk, allowedByPolicy: overCount && massOk, value: count, limit: g.max_deletes, message: say.count() });
  }
  return out;
}

function round(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}

function pct(x: number): string {
  return `${(x * 100).toFixed(1)}%`;
}
