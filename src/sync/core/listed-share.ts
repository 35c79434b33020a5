import type { FeedRole } from '../../config/feeds.js';
import type { OwnershipMode } from '../../config/policy.js';
import type { ChangesetSummary } from './changeset.js';

/**
 * Issue 13: a feed file that lists a small share of the dataset, and leaves
 * every record it does not list as it is, is merged and diffed through the
 * snapshot's primary key (only the records it lists are read), not by a
 * merge-join of the whole snapshot. The plan is the same either way; this
 * says which is cheaper, and puts the records not read back into the counts.
 */

/**
 * Listed share (file rows / snapshot records) up to which the indexed merge
 * and diff are taken. Measured on a 100,000-record dataset with every listed
 * quantity changed (feeds bench, BENCH_FEED_PATH, CPU of read + merge + diff
 * + plan, a shared machine): 25% listed, indexed 2.3-2.6 s against full
 * 2.6-3.0 s; 50%, even (3.5-4.3 s against 3.9-4.0 s); 100%, full ahead by
 * a fifth. Most of the cost is per changed record, alike on both paths; the
 * indexed path saves reading the unlisted records and adds a lookup per
 * listed one (the counts and value-guard bases of the others are kept in the
 * state db since migration 15, tallies.ts; these shares were measured when
 * SQLite counted them per sync, so the crossover is now if anything higher).
 * 0.4: below the crossover at about half.
 */
export const INDEXED_MAX_SHARE = 0.4;

/** What decides between the indexed and the full merge of one feed file. */
export interface ListedShare {
  role: FeedRole;
  /** An update feed's missing-record strategy (leave when it has none). */
  missing: 'leave' | 'set' | 'deactivate';
  /** Rows of the file (after its repeated ids were left out). */
  rows: number;
  /** Records in the snapshot. */
  records: number;
}

/**
 * True when the indexed merge and diff are taken: an update feed whose
 * missing strategy is leave, or a change list (records it does not name
 * stay as they are), listing at most INDEXED_MAX_SHARE of the snapshot. A
 * full feed, and set or deactivate (every record not listed may change),
 * read the whole snapshot. A small dataset goes by the same share: both
 * paths cost next to nothing there, and its tests then run the indexed one.
 */
export function mergeByIndex(s: ListedShare): boolean {
  const leaves = (s.role === 'update' && s.missing === 'leave') || s.role === 'changes';
  return leaves && s.rows <= INDEXED_MAX_SHARE * s.records;
}

/** Value-guard bases (value-guards.ts) of records, per field. */
export type FieldBases = Record<string, { zeroable: number; nonzero: number }>;

/** The snapshot's records an indexed diff did not read: unchanged, each compared (owned) or left alone (not owned). */
export interface Unlisted {
  records: number;
  owned: number;
  /** Their value-guard bases, of the fields the diff's tally has (the fields some record changed). */
  bases: FieldBases;
}

/**
 * An indexed diff's summary with the records it did not read put back, as
 * the full merge-join would have counted them: each owned one is in the
 * desired records and compared unchanged (its values in the guards' bases);
 * under ownership: source a not-owned one is left alone (notOwned). They make
 * no operation, so the digest and the foreign edits are as they are. Under
 * ownership: full every not-owned record must have been read (it is adopted).
 */
export function withUnlisted<S extends Omit<ChangesetSummary, 'head'>>(summary: S, u: Unlisted, ownership: OwnershipMode): S {
  const notOwned = u.records - u.owned;
  if (ownership === 'full' && notOwned !== 0) throw new TypeError(`an indexed diff under ownership: full left ${notOwned} not-owned records unread`);
  const c = summary.counts;
  const source = c.source + u.owned;
  const snapshot = c.snapshot + u.records;
  const snapshotOwned = c.snapshotOwned + u.owned;
  const left = c.notOwned + notOwned;
  const counts = {
    ...c,
    source,
    snapshot,
    snapshotOwned,
    unchanged: c.unchanged + u.owned,
    owned: source,
    notOwned: left,
    deletable: ownership === 'full' ? snapshot : snapshotOwned + c.adopted,
    result: source + left,
  };
  if (!summary.values) return { ...summary, counts };
  const fields = Object.fromEntries(
    Object.entries(summary.values.fields).map(([f, t]) => [f, { ...t, zeroable: (t.zeroable ?? 0) + (u.bases[f]?.zeroable ?? 0), nonzero: (t.nonzero ?? 0) + (u.bases[f]?.nonzero ?? 0) }]),
  );
  return { ...summary, counts, values: { fields } };
}
