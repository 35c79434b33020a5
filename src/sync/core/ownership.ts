import type { DatasetRecord, RecordField } from '../../model/record.js';
import { compareIds, type SnapshotReader } from '../../model/snapshot-reader.js';
import type { Changeset, RecordText } from './changeset.js';

/**
 * Whose records are they (issue 7). `ownership: source`: the connector owns a
 * record whose record_id came from this dataset's source, now or in an earlier
 * export it published; it never changes or deletes the others, and a replace
 * carries them over unchanged. `ownership: full`: the export is the whole truth.
 */

/** The source record with the server's values of the foreign-edited fields kept (on_foreign_edit: keep). */
export function applyKeptFields(source: DatasetRecord, server: DatasetRecord, fields: readonly RecordField[]): DatasetRecord {
  const out: Record<string, unknown> = { ...source };
  for (const f of fields) if (f !== 'record_id') out[f] = server[f];
  return out as unknown as DatasetRecord;
}

/**
 * The whole record set a replace must send, in record_id order, as canonical
 * JSON: the desired source records plus, in ownership: source, every
 * not-owned snapshot record the source does not contain, unchanged. Streams
 * both (issue 18): nothing of it is held in memory.
 */
export function* replaceRecords(changeset: Changeset, snapshot: SnapshotReader): Generator<RecordText> {
  if (changeset.listed) {
    yield* overlaidRecords(changeset, changeset.listed, snapshot);
    return;
  }
  if (changeset.ownership === 'full') {
    yield* changeset.records;
    return;
  }
  const it = changeset.records[Symbol.iterator]();
  let r = it.next();
  for (const e of snapshot.entries()) {
    while (!r.done && compareIds(r.value.record_id, e.record_id) < 0) {
      yield r.value;
      r = it.next();
    }
    if (!r.done && r.value.record_id === e.record_id) {
      yield r.value;
      r = it.next();
      continue;
    }
    if (!e.owned) yield { record_id: e.record_id, json: e.json }; // not ours: carried over
  }
  while (!r.done) {
    yield r.value;
    r = it.next();
  }
}

/**
 * replaceRecords of an indexed diff's changeset (issue 13): the snapshot with
 * the desired records of the ones it read in their place. A record it read
 * that has no desired record is deleted, or (not owned, ownership: source)
 * carried over as replaceRecords carries it; one it did not read is desired
 * as it is. The same body as the full diff's changeset gives, streamed from
 * the snapshot as it was planned against (it is unchanged until publish).
 */
function* overlaidRecords(changeset: Changeset, listed: Iterable<string>, snapshot: SnapshotReader): Generator<RecordText> {
  const it = changeset.records[Symbol.iterator]();
  const read = listed[Symbol.iterator]();
  let r = it.next();
  let l = read.next();
  for (const e of snapshot.entries()) {
    while (!r.done && compareIds(r.value.record_id, e.record_id) < 0) {
      yield r.value;
      r = it.next();
    }
    while (!l.done && compareIds(l.value, e.record_id) < 0) l = read.next();
    if (!r.done && r.value.record_id === e.record_id) {
      yield r.value;
      r = it.next();
    } else if (l.done || l.value !== e.record_id || (changeset.ownership === 'source' && !e.owned)) {
      yield { record_id: e.record_id, json: e.json };
    }
  }
  while (!r.done) {
    yield r.value;
    r = it.next();
  }
}

/** Expected draft counts of a replace built by replaceRecords, to check against the version detail (A19). */
export function expectedReplaceCounts(changeset: Changeset): { added: number; changed: number; deleted: number; records: number } {
  return {
    added: changeset.counts.adds,
    changed: changeset.counts.changes,
    deleted: changeset.counts.deletes,
    records: changeset.counts.result,
  };
}
