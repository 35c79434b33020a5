import type { DatasetRecord } from '../model/record.js';
import { canonicalJson } from '../model/canonical.js';
import { parsesBackAs, recordJson } from '../model/record-json.js';
import { compareIds, type SnapshotEntry } from '../model/snapshot-reader.js';
import { fieldValue, type FeedEntry } from './fields.js';
import { activeAfterRow, decide, put, StateCursor, type FeedStateEntry, type MergeRules, type FeedValue } from './resolve.js';

/** A row not applied to a record: its record does not exist (update), or exists already (create). */
export interface UnappliedRow {
  record_id: string;
  line: number;
  why: 'absent' | 'exists';
}

/** What an update feed's file did to the dataset's records (summary, reject file). */
export interface UpdateTally {
  /** Rows that matched a record the connector may change. */
  matched: number;
  /** Rows not applied for their record: it does not exist (UNMATCHED_RECORD), or a create's exists (RECORD_EXISTS). */
  unmatched: number;
  /** The unmatched rows with their lines, for the summary and the reject file (at most `keep`). */
  unmatchedIds: UnappliedRow[];
  /** Rows of records the connector does not own (ownership: source): left alone. */
  notOwned: number;
  /** The first of those records' ids (rows other than a change list's deletes), for the summary's warning. */
  notOwnedIds: string[];
  /** Records the feed may change (the base of the missing guard). */
  changeable: number;
  /** Records the file does not list that the missing strategy changes. */
  missing: number;
  /** Field values it changed (record × field), its rows' and the missing strategy's, for the summary and metrics. */
  fieldsChanged: number;
  /** Mapped cells left empty (row × field): no value, the field is left as it is (unless the feed's empty_clears names it). */
  blankCells: number;
  /** Records listed only by rows skipped as row errors (on_row_errors: skip_rows): listed, so the missing strategy left them as they are. */
  skippedListed: number;
  /** Bad rows whose record_id could not be read: the file may list any record, so the missing strategy did not run (0: it ran as configured). */
  missingNotRun: number;
}

/** Ids of not-owned records the summary names (the count is exact). */
export const FIRST_NOT_OWNED = 10;

/** A row of a record the connector does not own (ownership: source): counted, and its id kept among the first. */
export function notOwnedRow(tally: UpdateTally, recordId: string, named = true): void {
  tally.notOwned++;
  if (named && tally.notOwnedIds.length < FIRST_NOT_OWNED) tally.notOwnedIds.push(recordId);
}

/** A tally with nothing counted. */
export function newUpdateTally(): UpdateTally {
  return { matched: 0, unmatched: 0, unmatchedIds: [], notOwned: 0, notOwnedIds: [], changeable: 0, missing: 0, fieldsChanged: 0, blankCells: 0, skippedListed: 0, missingNotRun: 0 };
}

/** How a row's fields are applied: the feed's fields, which of them an empty cell clears, and the rules other feeds' values go by. */
export interface RowOptions {
  /** The fields the feed owns (it maps; record_id aside). */
  fields: readonly string[];
  /** Fields an empty cell clears (empty_clears); any other empty cell leaves its field as it is. */
  emptyClears: ReadonlySet<string>;
  rules: MergeRules;
  /**
   * Unmatched rows kept with their lines, at most (the source's max_row_errors_kept, as for the reader's row errors):
   * the count is exact; a file of a million ids that match nothing kept them all and took a gigabyte.
   */
  keepUnmatched: number;
}

export interface UpdateMergeOptions extends RowOptions {
  /** source: records not owned are never put in the desired records (the diff would adopt them). */
  ownership: 'source' | 'full';
  /** Records not listed: left as they are, fields set to values, or deactivated. */
  missing?: { strategy: 'leave' | 'set' | 'deactivate'; values?: Record<string, unknown> | undefined };
  /** The file's rows skipped as row errors (skip_rows): the record_ids that could be read, and how many could not. */
  skipped?: { ids: ReadonlySet<string>; withoutId: number } | undefined;
}

/** Where a merge puts what its feed's state becomes (written by the ledger only when the plan is published). */
export type StateSink = (e: FeedStateEntry) => void;

/**
 * The desired records of an update feed's file (issue 13), pure and streamed:
 * the snapshot's records with the fields the feed owns taken from its rows,
 * both sides (and `state`, the feeds' published values) in record_id order.
 * Never creates (a row without a record is counted unmatched) and never
 * deletes (every record the connector may change is in the output, unchanged
 * when the file does not list it, or as the missing strategy says: fields set,
 * or deactivated). A field another feed maps too goes by precedence, whichever
 * feed syncs (resolve.ts). Under ownership: source a record not owned is left
 * out, so the diff leaves it alone. A row's line goes with its record
 * (provenance, server row errors); records the file does not list have line 0.
 * What the feed's state becomes goes to `sink`: its own values (a value that
 * loses to another feed's is still its value), and the records it holds hidden.
 */
export function* mergeUpdate(
  rows: Iterable<FeedEntry>,
  snapshot: Iterable<SnapshotEntry>,
  state: Iterable<FeedValue>,
  opts: UpdateMergeOptions,
  tally: UpdateTally,
  sink: StateSink,
): Generator<FeedEntry> {
  const it = rows[Symbol.iterator]();
  const values = new StateCursor(state);
  let row = next(it);
  const unmatched = (r: FeedEntry) => {
    tally.unmatched++;
    if (tally.unmatchedIds.length < opts.keepUnmatched) tally.unmatchedIds.push({ record_id: r.record_id, line: r.line, why: 'absent' });
  };
  for (const e of snapshot) {
    while (row !== null && compareIds(row.record_id, e.record_id) < 0) {
      unmatched(row);
      row = next(it);
    }
    const listed = row !== null && row.record_id === e.record_id ? row : null;
    if (listed) row = next(it);
    if (opts.ownership === 'source' && !e.owned) {
      if (listed) notOwnedRow(tally, e.record_id);
      continue;
    }
    tally.changeable++;
    const m = missingOf(opts, tally);
    // A skipped row still lists its record: the file says it exists (only its values could not be read), so it is left as it is.
    const skipped = !listed && m !== null && (opts.skipped?.ids.has(e.record_id) ?? false);
    if (skipped) tally.skippedListed++;
    if (!listed && (m === null || skipped)) {
      yield { record_id: e.record_id, line: 0, json: e.json };
      continue;
    }
    const rec = e.record ?? (JSON.parse(e.json) as DatasetRecord);
    const st = values.at(e.record_id);
    if (!listed) {
      const out = whenMissing(rec, st, m!, opts, tally, e.record_id, sink);
      const json = recordJson(out);
      if (json !== e.json) tally.missing++;
      yield { record_id: e.record_id, line: 0, json };
      continue;
    }
    tally.matched++;
    const from = listed.record ?? (JSON.parse(listed.json) as DatasetRecord);
    const out = applyRow(rec, from, st, opts, tally, (v) => sink({ record_id: e.record_id, line: listed.line, values: v }));
    const json = recordJson(out);
    // The merged record beside its text when it parses back as itself: the diff compares it without parsing the text.
    yield parsesBackAs(out) ? { record_id: e.record_id, line: listed.line, json, record: out } : { record_id: e.record_id, line: listed.line, json };
  }
  for (; row !== null; row = next(it)) unmatched(row);
}

/**
 * `rec` with the feed's fields taken from its row `from`: an empty cell leaves
 * its field as it is (counted), unless empty_clears names it; a field another
 * feed maps too takes the value precedence gives. `record` gets the feed's own
 * values (its state).
 */
export function applyRow(
  rec: DatasetRecord,
  from: DatasetRecord,
  state: readonly FeedValue[],
  opts: RowOptions,
  tally: Pick<UpdateTally, 'fieldsChanged' | 'blankCells'>,
  record: (values: Record<string, unknown>) => void,
): DatasetRecord {
  let out = rec;
  const own: Record<string, unknown> = {};
  for (const f of opts.fields) {
    const v = fieldValue(from, f);
    if (isBlank(v) && !opts.emptyClears.has(f)) {
      tally.blankCells++;
      continue;
    }
    own[f] = v ?? null;
    out = put(out, f, decide(f, canonicalJson(v ?? null), state, opts.rules) ?? 'null', tally);
  }
  record(own);
  return activeAfterRow(out, state, opts.rules, 'active' in own, tally);
}

/** A record the file does not list, as the missing strategy leaves it: set's values are the feed's values (precedence applies), deactivate holds it hidden. */
function whenMissing(
  rec: DatasetRecord,
  state: readonly FeedValue[],
  m: NonNullable<UpdateMergeOptions['missing']>,
  opts: UpdateMergeOptions,
  tally: UpdateTally,
  recordId: string,
  sink: StateSink,
): DatasetRecord {
  if (m.strategy === 'deactivate') {
    sink({ record_id: recordId, line: 0, values: {}, hidden: true });
    return put(rec, 'active', 'false', tally);
  }
  let out = rec;
  const values = m.values ?? {};
  for (const [f, v] of Object.entries(values)) out = put(out, f, decide(f, canonicalJson(v), state, opts.rules), tally);
  sink({ record_id: recordId, line: 0, values });
  return out;
}

/**
 * The missing strategy as it may run for this file: null when it leaves every record. A bad row whose
 * record_id could not be read may be any record's, so no record can be known to be missing from the file:
 * the strategy does not run for it (counted; the summary says so) rather than zero or hide a listed record.
 */
function missingOf(opts: UpdateMergeOptions, tally: UpdateTally): NonNullable<UpdateMergeOptions['missing']> | null {
  const m = opts.missing;
  if (!m || m.strategy === 'leave') return null;
  const blind = opts.skipped?.withoutId ?? 0;
  if (blind > 0) {
    tally.missingNotRun = blind;
    return null;
  }
  return m;
}

/** An empty cell: no value (null), or empty text. */
function isBlank(v: unknown): boolean {
  return v === null || v === undefined || v === '';
}

function next(it: Iterator<FeedEntry>): FeedEntry | null {
  const r = it.next();
  return r.done ? null : r.value;
}
