import type { DatasetRecord } from '../model/record.js';
import { canonicalJson } from '../model/canonical.js';
import { recordJson } from '../model/record-json.js';
import { compareIds, type SnapshotEntry } from '../model/snapshot-reader.js';
import { fieldValue, withField, type FeedEntry } from './fields.js';

/** What an update feed's file did to the dataset's records (summary, reject file). */
export interface UpdateTally {
  /** Rows that matched a record the connector may change. */
  matched: number;
  /** Rows whose record does not exist (listed in the reject file as UNMATCHED_RECORD). */
  unmatched: number;
  /** The first unmatched ids with their lines, for the summary and the reject file (at most `keep`). */
  unmatchedIds: Array<{ record_id: string; line: number }>;
  /** Rows of records the connector does not own (ownership: source): left alone. */
  notOwned: number;
  /** Records the feed may change (the base of the missing guard). */
  changeable: number;
  /** Records the file does not list that the missing strategy changes. */
  missing: number;
  /** Field values its rows changed (record × field), for the summary and metrics. */
  fieldsChanged: number;
}

/** A tally with nothing counted; `keep`: how many unmatched ids to list. */
export function newUpdateTally(): UpdateTally {
  return { matched: 0, unmatched: 0, unmatchedIds: [], notOwned: 0, changeable: 0, missing: 0, fieldsChanged: 0 };
}

export interface UpdateMergeOptions {
  /** The fields the feed owns (it maps; record_id aside). */
  fields: readonly string[];
  /** source: records not owned are never put in the desired records (the diff would adopt them). */
  ownership: 'source' | 'full';
  /** Unmatched ids listed at most (the reject file lists these; the count is exact). */
  keepUnmatched: number;
  /** Records not listed: left as they are, fields set to values, or deactivated. */
  missing?: { strategy: 'leave' | 'set' | 'deactivate'; values?: Record<string, unknown> | undefined };
}

/** A record the file does not list, as the missing strategy leaves it. */
function whenMissing(rec: DatasetRecord, m: NonNullable<UpdateMergeOptions['missing']>): DatasetRecord {
  if (m.strategy === 'deactivate') return { ...rec, active: false };
  let out = rec;
  for (const [f, v] of Object.entries(m.values ?? {})) out = withField(out, f, v);
  return out;
}

/**
 * The desired records of an update feed's file (issue 13), pure and streamed:
 * the snapshot's records with the fields the feed owns taken from its rows,
 * both sides in record_id order. Never creates (a row without a record is
 * counted unmatched) and never deletes (every record the connector may change
 * is in the output, unchanged when the file does not list it, or as the
 * missing strategy says: fields set, or deactivated). Under
 * ownership: source a record not owned is left out, so the diff leaves it alone.
 * A row's line goes with its record (provenance, server row errors); records
 * the file does not list have line 0.
 */
export function* mergeUpdate(rows: Iterable<FeedEntry>, snapshot: Iterable<SnapshotEntry>, opts: UpdateMergeOptions, tally: UpdateTally): Generator<FeedEntry> {
  const it = rows[Symbol.iterator]();
  let row = next(it);
  const unmatched = (r: FeedEntry) => {
    tally.unmatched++;
    if (tally.unmatchedIds.length < opts.keepUnmatched) tally.unmatchedIds.push({ record_id: r.record_id, line: r.line });
  };
  for (const e of snapshot) {
    while (row !== null && compareIds(row.record_id, e.record_id) < 0) {
      unmatched(row);
      row = next(it);
    }
    const listed = row !== null && row.record_id === e.record_id ? row : null;
    if (listed) row = next(it);
    if (opts.ownership === 'source' && !e.owned) {
      if (listed) tally.notOwned++;
      continue;
    }
    tally.changeable++;
    if (!listed) {
      const m = opts.missing;
      if (!m || m.strategy === 'leave') {
        yield { record_id: e.record_id, line: 0, json: e.json };
        continue;
      }
      const json = recordJson(whenMissing(JSON.parse(e.json) as DatasetRecord, m));
      if (json !== e.json) tally.missing++;
      yield { record_id: e.record_id, line: 0, json };
      continue;
    }
    tally.matched++;
    const from = JSON.parse(listed.json) as DatasetRecord;
    const rec = setFields(JSON.parse(e.json) as DatasetRecord, from, opts.fields, tally);
    yield { record_id: e.record_id, line: listed.line, json: recordJson(rec) };
  }
  for (; row !== null; row = next(it)) unmatched(row);
}

/** `rec` with the feed's `fields` taken from `from`, counting the values that change. */
export function setFields(rec: DatasetRecord, from: DatasetRecord, fields: readonly string[], tally: Pick<UpdateTally, 'fieldsChanged'>): DatasetRecord {
  let out = rec;
  for (const f of fields) {
    const v = fieldValue(from, f);
    if (canonicalJson(fieldValue(out, f) ?? null) !== canonicalJson(v ?? null)) tally.fieldsChanged++;
    out = withField(out, f, v);
  }
  return out;
}

function next(it: Iterator<FeedEntry>): FeedEntry | null {
  const r = it.next();
  return r.done ? null : r.value;
}
