import { join } from 'node:path';
import type { DatasetConfig } from '../../config/schema.js';
import { fieldsOf, primaryFeed } from '../../config/feed-fields.js';
import type { GateFile } from '../core/gate.js';
import type { FeedEntry } from '../../feeds/fields.js';
import { mergeUpdate, newUpdateTally } from '../../feeds/merge-update.js';
import { mergeChanges, type ChangesTally } from '../../feeds/merge-changes.js';
import type { SnapshotEntry } from '../../snapshot/reader.js';
import { overlayFull } from '../../feeds/overlay-full.js';
import { FeedState } from '../../feeds/state.js';
import { hasFeeds, otherFeedFields, roleOf } from '../../feeds/view.js';
import type { RowError } from '../../model/row-error.js';
import type { SourceError } from '../../model/source-error.js';
import { rowErrorVerdict } from '../../sources/pipeline.js';
import { makePrivateDir } from '../core/changeset-files.js';
import type { PlanFeed } from '../core/plan.js';
import { SourceSorter, type SortedSource } from '../core/sorted-source.js';
import type { FeedSummary } from '../outcome.js';
import type { ExecContext } from './context.js';
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

/** The feed a plan of this read is made of, for the ledger's feed state; null for a dataset of one full feed. */
export function planFeedOf(ds: DatasetConfig, src: SourceRead, merged?: FeedSummary | null): PlanFeed | null {
  if (!hasFeeds(ds) || src.virtual) return null;
  const role = roleOf(ds);
  const own = fieldsOf(ds.feeds[ds.feed]!);
  // A full feed keeps state only of the fields another feed maps too (precedence compares them); the rest is its export's.
  const shared = new Set([...otherFeedFields(ds, ds.feed).values()].flatMap((f) => [...f]));
  const strategy = ds.feeds[ds.feed]!.missing?.strategy ?? 'leave';
  const missing = merged && strategy !== 'leave' ? { missing: { strategy, count: merged.missing, base: merged.changeable } } : {};
  return { name: ds.feed, role, fields: role === 'full' ? own.filter((f) => shared.has(f)) : own, at: src.mtimeMs ?? 0, ...missing };
}

/** What the held gate needs to know of a read (issue 13: a held change of another feed makes this file wait). */
export function gateFileOf(ds: DatasetConfig, src: SourceRead): GateFile {
  const feed = planFeedOf(ds, src);
  return { fileHash: src.fileHash, feed: feed ? { name: feed.name, primary: primaryFeed(ds.feeds), dataset: ds.name } : null };
}

/** A read of a feed's file: not uploadable when its records are merged (the server would map the file alone, A14). */
export function feedRead(ds: DatasetConfig, src: SourceRead): SourceRead {
  if (!hasFeeds(ds) || !src.importability.importable) return src;
  return { ...src, importability: { importable: false, reason: `feed ${ds.feed}'s records are merged with the dataset's other feeds` } };
}

/**
 * The desired records the diff reads (house style: map → merge → diff): a
 * dataset of one full feed diffs its export as read; an update feed's rows are
 * merged into the snapshot as reconciled (merge-update.ts); a full feed's
 * export takes the other feeds' published values (overlay-full.ts). Written
 * sorted into `dir` as the SortedSource the diff reads.
 */
export function desiredOf(ctx: ExecContext, ds: DatasetConfig, src: SourceRead, dir: string): Desired {
  const read = src.sorted!;
  const feed = planFeedOf(ds, src);
  if (!feed) return { sorted: read, feed: null, unmatched: [], rowErrors: 0 };
  const summary = summaryOfTally(feed.name, feed.role, newChangesTally(), 0);
  const tally = newChangesTally();
  const merged = feedStage(ctx, ds, feed, read.entries(), ctx.store.reader().entries(), tally);
  const out = join(dir, `merged-${feed.name}`);
  makePrivateDir(out);
  const sorter = new SourceSorter(out);
  for (const e of merged) sorter.add(e.record_id, e.line, e.json);
  const sorted = sorter.finish(() => undefined); // both sides are keyed by record_id: no repeats
  Object.assign(summary, summaryOfTally(feed.name, feed.role, tally, feed.role === 'full' ? read.count : 0));
  const rows = rowsOfTally(src.file, tally);
  return { sorted, feed: summary, unmatched: rows.all, rowErrors: rows.problems };
}

/**
 * One feed's file merged onto `base` (the snapshot as reconciled, or what the files before it in one plan made,
 * issue 13): an update feed's rows set its fields, a change list's rows apply their commands, a full feed's
 * export takes the other feeds' published values (`base` unused). Streamed in record_id order.
 */
export function feedStage(ctx: ExecContext, ds: DatasetConfig, feed: PlanFeed, rows: Iterable<FeedEntry>, base: Iterable<SnapshotEntry>, tally: ChangesTally): Iterable<FeedEntry> {
  const f = ds.feeds[feed.name]!;
  const commands = f.commands;
  if (feed.role === 'changes' && commands) {
    const column = typeof commands.column === 'string' ? commands.column : JSON.stringify(commands.column);
    return mergeChanges(rows, base, { fields: feed.fields, ownership: ctx.policy.ownership, commands, column }, tally);
  }
  if (feed.role === 'update') return mergeUpdate(rows, base, { fields: feed.fields, ownership: ctx.policy.ownership, keepUnmatched: Number.POSITIVE_INFINITY, missing: f.missing }, tally);
  return overlayFull(rows, new FeedState(ctx.db.conn, ctx.dataset).othersThan(feed.name), {
    feed: feed.name,
    own: new Set(feed.fields),
    others: otherFeedFields(ds, feed.name),
    precedence: ds.precedence,
    at: feed.at,
  });
}

/** A feed's summary from what its merge counted (`read`: the records of a full feed's file, all matched). */
export function summaryOfTally(name: string, role: FeedSummary['role'], tally: ChangesTally, read: number): FeedSummary {
  return {
    name,
    role,
    matched: read + tally.matched,
    unmatched: tally.unmatched,
    firstUnmatched: tally.unmatchedIds.slice(0, FIRST_UNMATCHED).map((u) => u.record_id),
    notOwned: tally.notOwned,
    changeable: tally.changeable,
    missing: tally.missing,
    fieldsChanged: tally.fieldsChanged,
  };
}

/** A tally with nothing counted, for any role. */
export function newChangesTally(): ChangesTally {
  return { ...newUpdateTally(), created: 0, deleted: 0, ignored: 0, problems: [] };
}

/** The reject-file rows of a feed's merge (unmatched records, change-list rows not applied), by line; `problems`: how many are row errors. */
export function rowsOfTally(file: string, tally: ChangesTally): { all: RowError[]; problems: number } {
  const unmatched = tally.unmatchedIds.map(
    (u): RowError => ({ file, line: u.line, column: 'record_id', value: u.record_id, reason: `no record ${u.record_id} in the dataset: an update feed never creates one`, code: 'UNMATCHED_RECORD' }),
  );
  const problems = tally.problems.map((p): RowError => ({ file, line: p.line, column: p.code === 'INVALID_COMMAND' ? 'command' : 'record', value: p.value, reason: p.reason, code: p.code }));
  return { all: [...unmatched, ...problems].sort((a, b) => a.line - b.line), problems: problems.length };
}
