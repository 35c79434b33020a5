import { createHash } from 'node:crypto';
import { ConnectorError } from '../errors.js';
import { canonicalJson } from '../model/canonical.js';
import type { DatasetRecord, RecordField } from '../model/record.js';
import { changedFields, patchOf } from '../snapshot/fields.js';
import { recordJson, textHash } from '../snapshot/record-json.js';
import { compareIds, type SnapshotEntry, type SnapshotReader } from '../snapshot/reader.js';
import type { Changeset, ChangesetCounts, ForeignEditNote, RecordChange, RecordDelete } from './changeset.js';
import type { OwnershipMode, Policy } from './policy.js';
import { applyKeptFields } from './ownership.js';

/** How the diff treats records it does not own and foreign edits (issue 7). */
export interface DiffOptions {
  ownership: OwnershipMode;
  onForeignEdit?: Policy['on_foreign_edit'];
}

/**
 * Diff the source against the snapshot by record_id.
 *
 * Memory: the source is collected once (it is the body of a replace and the
 * adds anyway) and sorted by record_id; the snapshot is streamed from SQLite
 * page by page and merge-joined, so only one copy of the data is held. A
 * snapshot record is parsed only when its hash differs from the source's.
 */
export async function diffRecords(
  source: Iterable<DatasetRecord> | AsyncIterable<DatasetRecord>,
  snapshot: SnapshotReader,
  options: DiffOptions,
): Promise<Changeset> {
  const records: DatasetRecord[] = [];
  for await (const r of source) records.push(r);
  records.sort((a, b) => compareIds(a.record_id, b.record_id));
  const steps = mergeJoin(records, snapshot, options);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    await new Promise<void>((resolve) => setImmediate(resolve)); // let timers and other datasets run
  }
}

/** The pure merge-join: `records` must be sorted by record_id (diffRecords does that). Replaces kept-field records in place. */
export function diffSorted(records: DatasetRecord[], snapshot: SnapshotReader, options: DiffOptions): Changeset {
  const steps = mergeJoin(records, snapshot, options);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** Records between pauses of the merge, so a large diff does not block the event loop. */
const SLICE = 10_000;

function* mergeJoin(records: DatasetRecord[], snapshot: SnapshotReader, options: DiffOptions): Generator<void, Changeset> {
  const keep = options.onForeignEdit === 'keep';
  const adds: DatasetRecord[] = [];
  const changes: RecordChange[] = [];
  const deletes: RecordDelete[] = [];
  const adopted: string[] = [];
  const foreignEdits: ForeignEditNote[] = [];
  const digest = createHash('sha256');
  let snapshotCount = 0;
  let snapshotOwned = 0;
  let unchanged = 0;
  let notOwned = 0;
  let notOwnedDeletes = 0;

  const drop = (e: SnapshotEntry): void => {
    if (e.owned || options.ownership === 'full') {
      deletes.push({ record_id: e.record_id, owned: e.owned });
      if (!e.owned) notOwnedDeletes++;
      digest.update(`d\0${e.record_id}\n`);
    } else {
      notOwned++; // issue 7: not ours, never changed or deleted
    }
  };

  let i = 0;
  for (const e of snapshot.entries()) {
    if (++snapshotCount % SLICE === 0) yield;
    if (e.owned) snapshotOwned++;
    while (i < records.length && compareIds(records[i]!.record_id, e.record_id) < 0) {
      const rec = records[i++]!;
      assertNextUnique(records, i, rec);
      adds.push(rec);
      digest.update(`a\0${rec.record_id}\0${textHash(recordJson(rec))}\n`);
    }
    const rec = i < records.length && records[i]!.record_id === e.record_id ? records[i] : undefined;
    if (!rec) {
      drop(e);
      continue;
    }
    assertNextUnique(records, i + 1, rec);
    if (!e.owned) {
      adopted.push(e.record_id);
      digest.update(`o\0${e.record_id}\n`);
    }
    let desired = rec;
    if (textHash(recordJson(rec)) === e.hash) {
      unchanged++;
      i++;
      continue;
    }
    const before = JSON.parse(e.json) as DatasetRecord;
    if (e.owned && e.foreignFields.length > 0) {
      const touched = e.foreignFields.filter((f) => canonicalJson(before[f]) !== canonicalJson(rec[f]));
      if (touched.length > 0) foreignEdits.push({ record_id: e.record_id, fields: touched, resolution: keep ? 'keep' : 'overwrite' });
      if (keep) desired = records[i] = applyKeptFields(rec, before, e.foreignFields);
    }
    i++;
    const fields: RecordField[] = changedFields(before, desired);
    if (fields.length === 0) {
      unchanged++;
      continue;
    }
    changes.push({ record_id: e.record_id, fields, patch: patchOf(desired, fields), record: desired, adopted: !e.owned });
    digest.update(`c\0${e.record_id}\0${fields.join(',')}\0${textHash(recordJson(desired))}\n`);
  }
  while (i < records.length) {
    const rec = records[i++]!;
    assertNextUnique(records, i, rec);
    adds.push(rec);
    digest.update(`a\0${rec.record_id}\0${textHash(recordJson(rec))}\n`);
  }

  const counts: ChangesetCounts = {
    source: records.length,
    snapshot: snapshotCount,
    snapshotOwned,
    adds: adds.length,
    changes: changes.length,
    deletes: deletes.length,
    unchanged,
    adopted: adopted.length,
    owned: records.length,
    notOwned,
    notOwnedDeletes,
    deletable: options.ownership === 'full' ? snapshotCount : snapshotOwned + adopted.length,
    result: records.length + notOwned,
  };
  return { ownership: options.ownership, records, adds, changes, deletes, adopted, foreignEdits, counts, digest: digest.digest('hex') };
}

/** The upserts, deletes and adoptions to confirm once the server published this changeset. */
export function confirmedParts(changeset: Changeset): { upserts: DatasetRecord[]; deletes: string[]; own: string[] } {
  return {
    upserts: [...changeset.adds, ...changeset.changes.map((c) => c.record)],
    deletes: changeset.deletes.map((d) => d.record_id),
    own: changeset.adopted,
  };
}

function assertNextUnique(records: DatasetRecord[], next: number, rec: DatasetRecord): void {
  if (next < records.length && records[next]!.record_id === rec.record_id) {
    throw new ConnectorError('DUPLICATE_RECORD_ID', `The source has record_id ${rec.record_id} more than once.`, {
      action: 'reject',
      context: { record_id: rec.record_id },
    });
  }
}
