import { join } from 'node:path';
import type { DatasetConfig } from '../../config/schema.js';
import { fieldsOf, mappersOf, primaryFeed } from '../../config/feed-fields.js';
import type { FeedRole } from '../../config/feeds.js';
import type { GateFile } from '../core/gate.js';
import type { FeedEntry } from '../../feeds/fields.js';
import { mergeUpdate, newUpdateTally, type StateSink, type UnappliedRow } from '../../feeds/merge-update.js';
import { HIDDEN, type MergeRules } from '../../feeds/resolve.js';
import { FeedStateWriter } from './feed-state-file.js';
import { commandColumnName, mergeChanges, type ChangesTally } from '../../feeds/merge-changes.js';
import type { SnapshotEntry } from '../../model/snapshot-reader.js';
import { overlayFull } from '../../feeds/overlay-full.js';
import { FeedState } from '../../feeds/state.js';
import { hasFeeds, otherFeedFields, roleOf } from '../../feeds/view.js';
import type { RowError } from '../../model/row-error.js';
import type { SourceError } from '../../model/source-error.js';
import { rowErrorVerdict } from '../../sources/pipeline.js';
import { makePrivateDir } from '../disk/changeset-files.js';
import type { PlanFeed } from '../core/plan.js';
import { MEMORY_CHARS, RUN_BYTES, type SortedSource } from '../disk/sorted-source.js';
import { SourceSorter } from '../disk/source-sorter.js';
import type { FeedSummary } from '../outcome.js';
import type { ExecContext } from './context.js';
import { diffListed, listedEntries, listedRead, listedState, unlistedOwned, type Listed, type MergePath } from './feed-indexed.js';
import { diffSource } from '../disk/diff-source.js';
import { diffOptionsOf } from '../core/diff.js';
import type { Changeset } from '../core/changeset.js';
import type { SourceRead } from './source-read.js';

/** Unmatched record ids named in the summary (the reject file lists them all). */
const FIRST_UNMATCHED = 10;

/** The desired records of one read (issue 13's merge stage), what the feed's rows matched, and rows for the reject file. */
export interface Desired {
  sorted: SortedSource;
  feed: FeedSummary | null;
  /** UNMATCHED_RECORD rows of an update feed or change list, and a change list's rows not applied (INVALID_COMMAND, INVALID_RECORD). */
  unmatched: RowError[];
  /** Of those, rows that are row errors (counted in the summary's rowErrors). */
  rowErrors: number;
  /** What the feed's state becomes when a plan of these records is published (FeedStateEntry lines); null: no feeds. */
  stateFile: string | null;
  /** Merged by index (feed-indexed.ts): only these snapshot records were read, and the diff reads only them. */
  listed?: Listed;
  /** Several files (feed-batch.ts): the summary warnings of every file, each naming its file; absent: feedWarnings of `feed`. */
  warnings?: string[];
  /** Several files (feed-batch.ts): each feed's counts summed over its files, with the rows it read; `feed` is the lead feed's. */
  feeds?: FeedTotal[];
}

/** A feed's counts over every file of it in one plan, and the rows those files had (issue 13's coalescing). */
export type FeedTotal = FeedSummary & { rows: number };

/** One entry per feed, in first-seen order: the counts of its files added up (the first unmatched ids of all of them, up to the summary's limit). */
export function feedTotals(files: ReadonlyArray<{ summary: FeedSummary; rows: number }>): FeedTotal[] {
  const byFeed = new Map<string, FeedTotal>();
  for (const { summary: f, rows } of files) {
    const had = byFeed.get(f.name);
    if (!had) {
      byFeed.set(f.name, { ...f, firstUnmatched: [...f.firstUnmatched], ...(f.firstNotOwned ? { firstNotOwned: [...f.firstNotOwned] } : {}), ...(f.firstDeletesNotOwned ? { firstDeletesNotOwned: [...f.firstDeletesNotOwned] } : {}), rows });
      continue;
    }
    for (const k of ['matched', 'unmatched', 'notOwned', 'changeable', 'missing', 'fieldsChanged', 'blankCells', 'skippedListed', 'missingNotRun'] as const) had[k] += f[k];
    had.rows += rows;
    had.firstUnmatched = [...had.firstUnmatched, ...f.firstUnmatched].slice(0, FIRST_UNMATCHED);
    if (f.firstNotOwned) had.firstNotOwned = [...(had.firstNotOwned ?? []), ...f.firstNotOwned].slice(0, FIRST_UNMATCHED);
    if (f.deletesNotOwned) {
      had.deletesNotOwned = (had.deletesNotOwned ?? 0) + f.deletesNotOwned;
      had.firstDeletesNotOwned = [...(had.firstDeletesNotOwned ?? []), ...(f.firstDeletesNotOwned ?? [])].slice(0, FIRST_UNMATCHED);
    }
  }
  return [...byFeed.values()];
}

/**
 * A change list's rows that cannot be applied (an unknown command word, a record it cannot make) are bad rows
 * of the file like the reader's own: on_row_errors decides (reject_file, the default: nothing of the file is
 * used; skip_rows: the rest is used up to max_bad_row_ratio). Null when the merged records may be used.
 */
export function feedRowVerdict(ds: DatasetConfig, src: SourceRead, desired: Desired): SourceError | null {
  if (desired.rowErrors === 0) return null;
  const badRows = new Set(src.rowErrors.map((e) => e.line)).size + desired.rowErrors;
  return rowErrorVerdict(src.file, { rows: src.rows, bad_rows: badRows }, ds.source);
}

/**
 * The feed a plan of this read is made of, for the ledger's feed state and its last file (`status`, every
 * dataset's feeds, the single-source form's `main` too); null for a restore's. A dataset of one full feed
 * keeps no values as state (`fields` empty: no other feed merges with it).
 */
export function planFeedOf(ds: DatasetConfig, src: SourceRead, merged?: FeedSummary | null): PlanFeed | null {
  if (src.virtual) return null;
  const role = roleOf(ds);
  const strategy = ds.feeds[ds.feed]!.missing?.strategy ?? 'leave';
  const missing = merged && strategy !== 'leave' ? { missing: { strategy, count: merged.missing, base: merged.changeable } } : {};
  return { name: ds.feed, role, fields: stateFieldsOf(ds, ds.feed), at: src.valuesAt ?? src.mtimeMs ?? 0, ...missing };
}

/**
 * The time of a file's values, which precedence: newest compares (issue 13): the
 * file's modification time as the connector read it (when the POS wrote it, not
 * when it was synced: a catalogue written before a stock file but synced after it
 * is the older), never later than the time it was read (a clock ahead on the
 * exporting machine must not make its values win for ever); a file without a
 * time takes the time it was read.
 */
export function valuesTime(mtimeMs: number | undefined, readAt: number): number {
  return mtimeMs && mtimeMs > 0 ? Math.min(mtimeMs, readAt) : readAt;
}

/** What the held gate needs to know of a read (issue 13: a held change of another feed makes this file wait). */
export function gateFileOf(ds: DatasetConfig, src: SourceRead): GateFile {
  const feed = hasFeeds(ds) ? planFeedOf(ds, src) : null;
  return { fileHash: src.fileHash, feed: feed ? { name: feed.name, primary: primaryFeed(ds.feeds), dataset: ds.name } : null };
}

/**
 * Whether a read's records are diffed as they are read (a dataset without feeds): only then does its sort keep
 * the value guards' flags beside each record (readSource's valueFlags). A feed's rows are merged first and the
 * merged records sorted again without them, so computing them cost a stock file's read a tenth of its CPU for nothing.
 */
export function diffsAsRead(ds: DatasetConfig): boolean {
  return !hasFeeds(ds);
}

/**
 * A read of a feed's file, as merged, with the time of its values (`now`: when it was read). Not uploadable when
 * its records are merged (the server would map the file alone, A14). That is the reason given whatever else the
 * read says: an update feed's reader mapping has placeholders for the fields it does not map, which the plan would
 * otherwise name as "not a plain column pick".
 */
export function feedRead(ds: DatasetConfig, src: SourceRead, now: number): SourceRead {
  if (!hasFeeds(ds)) return src;
  const timed = { ...src, valuesAt: valuesTime(src.mtimeMs, now) };
  return { ...timed, importability: { importable: false, reason: `feed ${ds.feed}'s records are merged with the dataset's other feeds` } };
}

/**
 * The desired records the diff reads (house style: map → merge → diff): a
 * dataset of one full feed diffs its export as read; an update feed's or
 * change list's rows are merged into the snapshot as reconciled
 * (merge-update.ts, merge-changes.ts); a full feed's export takes the other
 * feeds' published values (overlay-full.ts). The feed state is read here (the
 * merge stays pure) and what it becomes is written beside the merged records
 * (`stateFile`, put in the plan's changeset folder; the ledger applies it when
 * the plan is published). Written sorted into `dir` as the SortedSource the diff reads
 * (kept in memory up to `memoryChars`, as the snapshot records an indexed merge read).
 */
export function desiredOf(ctx: ExecContext, ds: DatasetConfig, src: SourceRead, dir: string, path?: MergePath, memoryChars = MEMORY_CHARS): Desired {
  const read = src.sorted!;
  const feed = hasFeeds(ds) ? planFeedOf(ds, src) : null;
  if (!feed) return { sorted: read, feed: onlyFeedSummary(ds, src), unmatched: [], rowErrors: 0, stateFile: null };
  const tally = newChangesTally();
  const out = join(dir, `merged-${feed.name}`);
  makePrivateDir(out);
  const stateFile = join(dir, `state-${feed.name}`);
  const sink = new FeedStateWriter(stateFile);
  const sorter = new SourceSorter(out, RUN_BYTES, memoryChars);
  // A file that lists a small share of the dataset and leaves the rest: only the records it lists are read.
  const listed = listedRead(ctx, ds, feed, read, dir, path, memoryChars);
  const seen = { records: 0, owned: 0 };
  const state = new FeedState(ctx.db.conn, ctx.dataset);
  const base = listed ? listedEntries(ctx.store, listed, seen) : ctx.store.reader().entries();
  try {
    for (const e of feedStage(ctx, ds, feed, read.entries(), base, listed ? listedState(state, listed) : state, tally, sink.put, src.badRows)) sorter.add(e.record_id, e.line, e.json, e.record);
  } finally {
    sink.close();
  }
  if (listed) tally.changeable += unlistedOwned(listed, seen);
  const sorted = sorter.finish(() => undefined); // both sides are keyed by record_id: no repeats
  const rows = rowsOfTally(src.file, feed.role, tally);
  const merged = { sorted, feed: summaryOfTally(feed.name, feed.role, tally, feed.role === 'full' ? read.count : 0), unmatched: rows.all, rowErrors: rows.problems, stateFile };
  return listed ? { ...merged, listed } : merged;
}

/**
 * A merge's feed summaries with the fields their plan changes, as the diff counted them (a full feed's merge
 * changes nothing it could count: its file is the records): the plan's every changed field for a plan of one
 * file; for a plan of several files, each feed those of the fields it maps.
 */
export function withFieldsChanged(ds: DatasetConfig, desired: Pick<Desired, 'feed' | 'feeds'>, changeset: Pick<Changeset, 'fieldsChanged'>): Pick<Desired, 'feed' | 'feeds'> {
  const counts = changeset.fieldsChanged;
  if (!desired.feed || !counts) return desired;
  const sum = (fields: readonly string[]) => fields.reduce((n, f) => n + (counts[f] ?? 0), 0);
  if (!desired.feeds || desired.feeds.length < 2) {
    const all = sum(Object.keys(counts));
    return { feed: { ...desired.feed, fieldsChanged: all }, ...(desired.feeds ? { feeds: desired.feeds.map((f) => ({ ...f, fieldsChanged: all })) } : {}) };
  }
  const feeds = desired.feeds.map((f) => ({ ...f, fieldsChanged: (ds.feeds[f.name] ? sum(fieldsOf(ds.feeds[f.name]!)) : 0) }));
  const { rows: _rows, ...lead } = feeds[0]!;
  return { feed: lead, feeds };
}

/** The diff of a merge's desired records against the snapshot: the whole of it, or (merged by index) the records the merge read. */
export function diffDesired(ctx: ExecContext, desired: Pick<Desired, 'sorted' | 'listed'>, dir: string): Promise<Changeset> {
  if (desired.listed) return diffListed(ctx, desired.sorted, desired.listed, dir);
  return diffSource(desired.sorted, ctx.store.reader(), diffOptionsOf(ctx.policy), dir);
}

/** The feed state a merge reads: the state database's (FeedState), or a batch's as the files before it would leave it (StateOverlay). */
export type StateValues = Pick<FeedState, 'valuesOf' | 'othersThan'>;

/**
 * One feed's file merged onto `base` (the snapshot as reconciled, or what the files before it in one plan made,
 * issue 13) with the feed state `state`: an update feed's rows set its fields, a change list's rows apply their
 * commands, a full feed's export takes the other feeds' values (`base` unused). What the feed's state becomes
 * goes to `put`. The state is read when this is called; the records stream in record_id order.
 */
export function feedStage(ctx: ExecContext, ds: DatasetConfig, feed: PlanFeed, rows: Iterable<FeedEntry>, base: Iterable<SnapshotEntry>, state: StateValues, tally: ChangesTally, put: StateSink, skipped?: SourceRead['badRows']): Iterable<FeedEntry> {
  const cfg = ds.feeds[feed.name]!;
  const rules = mergeRulesOf(ds, feed.name, feed.at);
  const row = { fields: feed.fields, emptyClears: new Set(cfg.empty_clears ?? []), rules, keepUnmatched: (cfg.source ?? ds.source).max_row_errors_kept };
  if (feed.role === 'changes' && cfg.commands) {
    const column = commandColumnName(cfg.commands);
    return mergeChanges(rows, base, state.valuesOf(stateNeeds(ds, feed.name)), { ...row, ownership: ctx.policy.ownership, commands: cfg.commands, column }, tally, put);
  }
  if (feed.role === 'update') {
    return mergeUpdate(rows, base, state.valuesOf(stateNeeds(ds, feed.name)), { ...row, ownership: ctx.policy.ownership, missing: cfg.missing, skipped }, tally, put);
  }
  return overlayFull(rows, state.othersThan(feed.name), { shared: feed.fields, rules }, put);
}

/**
 * The summary of a dataset's one full feed, which merges nothing: every record of its file matched (README: the
 * summary's `feed` and the dataset_connector_feed_* series exist for every dataset, the single-source form's as
 * feed main, as status lists its last file). Null for a file that is no feed's (a restore's).
 */
function onlyFeedSummary(ds: DatasetConfig, src: SourceRead): FeedSummary | null {
  if (src.virtual) return null;
  return summaryOfTally(ds.feed, roleOf(ds), newChangesTally(), src.sorted!.count);
}

/** A feed's summary from what its merge counted (`read`: the records of a full feed's file, all matched). */
export function summaryOfTally(name: string, role: FeedRole, tally: ChangesTally, read: number): FeedSummary {
  return {
    name,
    role,
    matched: read + tally.matched,
    unmatched: tally.unmatched,
    firstUnmatched: tally.unmatchedIds.slice(0, FIRST_UNMATCHED).map((u) => u.record_id),
    ...(tally.unmatchedIds.length < tally.unmatched ? { unmatchedListed: tally.unmatchedIds.length } : {}),
    notOwned: tally.notOwned,
    ...(tally.notOwnedIds.length > 0 ? { firstNotOwned: tally.notOwnedIds.slice(0, FIRST_UNMATCHED) } : {}),
    changeable: tally.changeable,
    missing: tally.missing,
    fieldsChanged: tally.fieldsChanged,
    blankCells: tally.blankCells,
    skippedListed: tally.skippedListed,
    missingNotRun: tally.missingNotRun,
    ...(tally.deletesNotOwned > 0 ? { deletesNotOwned: tally.deletesNotOwned, firstDeletesNotOwned: tally.firstDeletesNotOwned } : {}),
  };
}

/** Marks feedWarnings' warning of rows naming records the connector does not own (logged as feed.not_owned too). */
export const NOT_OWNED_WARNING = 'the connector does not own (made in the portal or by another tool), left as';

/** What the summary says of a feed's file beside its counts: cells left empty, and records its skipped rows kept from the missing strategy. */
export function feedWarnings(file: string, feed: FeedSummary): string[] {
  const out: string[] = [];
  const blank = feed.blankCells;
  if (blank > 0) {
    out.push(`${blank} empty mapped cell${blank === 1 ? '' : 's'} in ${file}: no value, so ${blank === 1 ? 'its field was left as it was' : 'their fields were left as they were'} (feed ${feed.name}; empty_clears: [<field>] makes an empty cell clear a field)`);
  }
  if (feed.skippedListed > 0) {
    const n = feed.skippedListed;
    out.push(`${n} record${n === 1 ? '' : 's'} listed in ${file} only by rows skipped as row errors: left as ${n === 1 ? 'it was' : 'they were'}, not changed by the missing strategy (feed ${feed.name}; the reject file lists the rows)`);
  }
  const notOwned = feed.notOwned - (feed.deletesNotOwned ?? 0);
  if (notOwned > 0) {
    const first = feed.firstNotOwned ?? [];
    const rest = notOwned - first.length;
    const ids = first.length > 0 ? `: ${first.join(', ')}${rest > 0 ? ` and ${rest} more` : ''}` : '';
    out.push(
      `${notOwned} row${notOwned === 1 ? '' : 's'} in ${file} name${notOwned === 1 ? 's a record' : ' records'} ${NOT_OWNED_WARNING} ${notOwned === 1 ? 'it is' : 'they are'}${ids} (feed ${feed.name}; policy.ownership: full lets the feed change every record of the dataset, see README "Ownership"; or let the connector's full feed list them first)`,
    );
  }
  if (feed.deletesNotOwned) {
    const n = feed.deletesNotOwned;
    const first = (feed.firstDeletesNotOwned ?? []).map((d) => `${d.record_id} (line ${d.line})`).join(', ');
    const rest = n - (feed.firstDeletesNotOwned ?? []).length;
    out.push(
      `${n} delete row${n === 1 ? '' : 's'} in ${file} name${n === 1 ? 's a record' : ' records'} the connector does not own (made by hand or by another tool), not deleted: ${first}${rest > 0 ? ` and ${rest} more` : ''} (feed ${feed.name}; delete ${n === 1 ? 'it' : 'them'} in the portal, or set policy.ownership: full if the export is the whole truth)`,
    );
  }
  if (feed.missingNotRun > 0) {
    const n = feed.missingNotRun;
    out.push(`the missing strategy of feed ${feed.name} did not run for ${file}: ${n} row${n === 1 ? '' : 's'} skipped as row errors ${n === 1 ? 'has' : 'have'} no readable record_id, so no record can be known to be missing from it (fix the rows; the reject file lists them)`);
  }
  return out;
}

/** A tally with nothing counted, for any role. */
export function newChangesTally(): ChangesTally {
  return { ...newUpdateTally(), created: 0, deleted: 0, ignored: 0, problems: [], deletesNotOwned: 0, firstDeletesNotOwned: [] };
}

/** The reject-file rows of a feed's merge (rows not applied to their record, change-list rows not applied), by line; `problems`: how many are row errors. */
export function rowsOfTally(file: string, role: FeedRole, tally: ChangesTally): { all: RowError[]; problems: number } {
  const unmatched = tally.unmatchedIds.map((u): RowError => unappliedRow(file, role, u));
  const problems = tally.problems.map((p): RowError => ({ file, line: p.line, column: p.code === 'INVALID_COMMAND' ? 'command' : 'record', value: p.value, reason: p.reason, code: p.code }));
  return { all: [...unmatched, ...problems].sort((a, b) => a.line - b.line), problems: problems.length };
}

/** A row not applied to its record, for the reject file: what the row asked, and what to do. */
function unappliedRow(file: string, role: FeedRole, u: UnappliedRow): RowError {
  if (u.why === 'exists') {
    return { file, line: u.line, column: 'record_id', value: u.record_id, code: 'RECORD_EXISTS', reason: `record ${u.record_id} exists already: create only makes new records (use upsert or update to change it)` };
  }
  const reason =
    role === 'changes'
      ? `no record ${u.record_id} in the dataset: update changes only records that exist (use upsert or create to make one)`
      : `no record ${u.record_id} in the dataset: an update feed never creates one`;
  return { file, line: u.line, column: 'record_id', value: u.record_id, code: 'UNMATCHED_RECORD', reason };
}

/** How a feed's values meet the other feeds' (resolve.ts): who maps what, precedence, the feeds that hide records. */
export function mergeRulesOf(ds: DatasetConfig, feed: string, at: number): MergeRules {
  const hiders = new Set(Object.entries(ds.feeds).filter(([, f]) => f.role === 'update' && f.missing?.strategy === 'deactivate').map(([n]) => n));
  return { feed, at, mappers: mappersOf(ds.feeds), precedence: ds.precedence, hiders };
}

/**
 * The fields of `feed` kept in its state: an update feed's or change list's
 * own (the values it set); a full feed's only those another feed maps too
 * (precedence compares them), and active when another feed deactivates (a record
 * it held hidden comes back to the catalogue's active).
 */
export function stateFieldsOf(ds: DatasetConfig, feed: string): string[] {
  const own = fieldsOf(ds.feeds[feed]!);
  if (ds.feeds[feed]!.role !== 'full') return own;
  const others = [...otherFeedFields(ds, feed).values()].flatMap((f) => [...f]);
  const hidden = Object.entries(ds.feeds).some(([n, f]) => n !== feed && f.role === 'update' && f.missing?.strategy === 'deactivate');
  return own.filter((f) => others.includes(f) || (f === 'active' && hidden));
}

/** The state fields an update feed's or change list's merge reads: the fields it shares (precedence), and what hiding needs; none: nothing is read. */
function stateNeeds(ds: DatasetConfig, feed: string): string[] {
  const mappers = mappersOf(ds.feeds);
  const f = ds.feeds[feed]!;
  const own = fieldsOf(f);
  const shared = own.filter((x) => (mappers.get(x)?.length ?? 0) > 1);
  const hides = (f.role === 'update' && f.missing?.strategy === 'deactivate') || own.includes('active');
  return hides ? [...new Set([...shared, 'active', HIDDEN])] : shared;
}
