import type { DatasetRecord } from '../model/record.js';
import { recordJson } from '../model/record-json.js';
import { compareIds } from '../model/snapshot-reader.js';
import { withField, type FeedEntry } from './fields.js';
import type { FeedValue } from './state.js';

export interface OverlayOptions {
  /** The full feed whose file is read. */
  feed: string;
  /** The fields it maps (record_id aside). */
  own: ReadonlySet<string>;
  /** The fields each other configured feed maps (values of feeds no longer configured are ignored). */
  others: ReadonlyMap<string, ReadonlySet<string>>;
  /** Dataset precedence: field → the feed that wins, or newest. */
  precedence: Readonly<Record<string, string>>;
  /** The time of the file read (ms), which newest compares with the others' values. */
  at: number;
}

/**
 * The desired records of a full feed's file (issue 13), pure and streamed: the
 * export's records with the fields other feeds own taken from their latest
 * published values (a catalogue without stock keeps the stock the stock feed
 * set). A field both map goes by precedence: the named feed's value when it
 * has one, or with newest the most recent file's. `values` must be in
 * record_id order (state.ts reads them so).
 */
export function* overlayFull(entries: Iterable<FeedEntry>, values: Iterable<FeedValue>, opts: OverlayOptions): Generator<FeedEntry> {
  const it = values[Symbol.iterator]();
  let v = nextOf(it);
  for (const e of entries) {
    while (v !== null && compareIds(v.record_id, e.record_id) < 0) v = nextOf(it);
    const mine: FeedValue[] = [];
    while (v !== null && v.record_id === e.record_id) {
      if (opts.others.get(v.feed)?.has(v.field)) mine.push(v);
      v = nextOf(it);
    }
    if (mine.length === 0) {
      yield e;
      continue;
    }
    let rec = JSON.parse(e.json) as DatasetRecord;
    for (const [field, candidates] of byField(mine)) {
      const won = winner(field, candidates, opts);
      if (won) rec = withField(rec, field, JSON.parse(won.value));
    }
    yield { record_id: e.record_id, line: e.line, json: recordJson(rec) };
  }
}

/** The value that goes in the record, or null when the export's own stands. */
function winner(field: string, candidates: FeedValue[], opts: OverlayOptions): FeedValue | null {
  const rule = opts.precedence[field];
  const newest = candidates.reduce((a, b) => (b.at > a.at ? b : a));
  if (rule === 'newest') return opts.own.has(field) && opts.at >= newest.at ? null : newest;
  if (rule !== undefined) return rule === opts.feed ? null : (candidates.find((c) => c.feed === rule) ?? (opts.own.has(field) ? null : newest));
  // One owner (validate refuses two without precedence): another feed's field.
  return opts.own.has(field) ? null : newest;
}

function byField(values: FeedValue[]): Map<string, FeedValue[]> {
  const out = new Map<string, FeedValue[]>();
  for (const v of values) {
    const list = out.get(v.field);
    if (list) list.push(v);
    else out.set(v.field, [v]);
  }
  return out;
}

function nextOf<T>(it: Iterator<T>): T | null {
  const r = it.next();
  return r.done ? null : r.value;
}
