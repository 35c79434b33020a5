import { recordJson } from './record-json.js';
import type { DatasetRecord, RecordField } from './record.js';

/** One record of the snapshot as the diff sees it. */
export interface SnapshotEntry {
  record_id: string;
  /** Canonical JSON of the published record (record-json.ts): equal text, equal record. */
  json: string;
  /** The connector owns it: its record_id came from this dataset's source (issue 7). */
  owned: boolean;
  /** Top-level fields someone else edited on the server in a record the connector owns. */
  foreignFields: readonly RecordField[];
  /** JSON.parse of `json`, when the reader has it at hand (an indexed merge's, read by its diff again): read, never changed. */
  readonly record?: DatasetRecord;
}

/** The snapshot streamed in record_id byte order (SQLite BINARY = JS code-unit order for A6 ids). */
export interface SnapshotReader {
  entries(): Iterable<SnapshotEntry>;
}

/** Input of snapshotReaderFrom: a record, or a record with its ownership. */
export type SnapshotSeed = DatasetRecord | { record: DatasetRecord; owned?: boolean; foreignFields?: RecordField[] };

/** An in-memory SnapshotReader, for pure tests and for plans without a database. Records are owned unless said otherwise. */
export function snapshotReaderFrom(seeds: Iterable<SnapshotSeed>): SnapshotReader {
  const entries = [...seeds].map((s) => toEntry('record' in s && typeof s.record === 'object' ? s : { record: s as DatasetRecord }));
  entries.sort((a, b) => compareIds(a.record_id, b.record_id));
  return { entries: () => entries[Symbol.iterator]() };
}

/** Build a SnapshotEntry for a record. */
export function toEntry(seed: { record: DatasetRecord; owned?: boolean; foreignFields?: RecordField[] }): SnapshotEntry {
  return {
    record_id: seed.record.record_id,
    json: recordJson(seed.record),
    owned: seed.owned ?? true,
    foreignFields: seed.foreignFields ?? [],
  };
}

/**
 * Byte order of record ids: the order of SQLite's BINARY collation over UTF-8
 * and of GET /records (A7), which is Unicode code point order. JS `<` compares
 * UTF-16 code units, which agrees except where a surrogate (a character above
 * U+FFFF) meets U+E000–U+FFFF: A6 ids are ASCII, but a snapshot rebuilt from a
 * server holds whatever it holds, and a merge-join in the wrong order pairs
 * nothing and deletes everything.
 */
export function compareIds(a: string, b: string): number {
  if (a === b) return 0;
  const lt = a < b;
  // Only a difference where both code units are >= U+D800 can disagree; find the first difference.
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  if (i < n) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x >= 0xd800 && y >= 0xd800 && x <= 0xdfff !== y <= 0xdfff) return x <= 0xdfff ? 1 : -1;
  }
  return lt ? -1 : 1;
}

/** compareIds where one of the two ids is plain (isPlainId): they then first differ below U+D800, where UTF-16 order is byte order. */
export function plainCompare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** True when `id` holds no code unit at or above U+D800, where UTF-16 order and byte order agree (compareIds' fast case). */
export function isPlainId(id: string): boolean {
  return !HIGH_UNIT.test(id);
}

const HIGH_UNIT = /[\ud800-\uffff]/;
