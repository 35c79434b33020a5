import { recordJson, textHash } from './record-json.js';
import type { DatasetRecord, RecordField } from '../model/record.js';

/** One record of the snapshot as the diff sees it. */
export interface SnapshotEntry {
  record_id: string;
  /** sha256 of `json`. */
  hash: string;
  /** Canonical JSON of the published record. */
  json: string;
  /** The connector owns it: its record_id came from this dataset's source (issue 7). */
  owned: boolean;
  /** Top-level fields someone else edited on the server in a record the connector owns. */
  foreignFields: readonly RecordField[];
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
  const json = recordJson(seed.record);
  return {
    record_id: seed.record.record_id,
    hash: textHash(json),
    json,
    owned: seed.owned ?? true,
    foreignFields: seed.foreignFields ?? [],
  };
}

/** Byte order of record ids, the order of SQLite's BINARY collation and of GET /records (A7). */
export function compareIds(a: string, b: string): number {
  // A6 ids are ASCII, where UTF-16 code-unit order equals UTF-8 byte order.
  return a < b ? -1 : a > b ? 1 : 0;
}
