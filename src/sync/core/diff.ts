import { createHash } from 'node:crypto';
import { ConnectorError } from '../../errors.js';
import { canonicalJson } from '../../model/canonical.js';
import type { DatasetRecord, RecordField } from '../../model/record.js';
import { changedFields, patchOf } from '../../model/fields.js';
import { recordJson, textHash } from '../../model/record-json.js';
import { compareIds, plainCompare, type SnapshotEntry, type SnapshotReader } from '../../model/snapshot-reader.js';
import {
  HEAD_OPERATIONS,
  type Changeset,
  type ChangesetCounts,
  type ChangesetHead,
  type ChangesetSummary,
  type ForeignEditNote,
  type RecordChange,
  type RecordDelete,
  type RecordText,
  type ChangesetSink,
  type SourceEntry,
} from './changeset.js';
import type { OwnershipMode, Policy } from '../../config/policy.js';
import { applyKeptFields } from './ownership.js';
import { ValueTallier, type ValueRule } from './value-guards.js';

/** How the diff treats records it does not own and foreign edits (issue 7). */
export interface DiffOptions {
  ownership: OwnershipMode;
  onForeignEdit?: Policy['on_foreign_edit'];
  /** Value-guard rules (issue 14): the diff tallies the value changes they look at. */
  values?: readonly ValueRule[];
}

/** The diff options a dataset's policy gives. */
export function diffOptionsOf(policy: Policy): DiffOptions {
  return { ownership: policy.ownership, onForeignEdit: policy.on_foreign_edit, values: policy.guards.values };
}

/**
 * Diff records held in memory (tests, small inputs): collected, sorted by
 * record_id and merge-joined like diffSource (sync/disk/diff-source.ts), into a changeset of arrays.
 */
export async function diffRecords(
  source: Iterable<DatasetRecord> | AsyncIterable<DatasetRecord>,
  snapshot: SnapshotReader,
  options: DiffOptions,
): Promise<Changeset> {
  const records: DatasetRecord[] = [];
  for await (const r of source) records.push(r);
  records.sort((a, b) => compareIds(a.record_id, b.record_id));
  return diffSorted(records, snapshot, options);
}

/** The pure merge-join of records held in memory; `records` must be sorted by record_id (diffRecords does that). */
export function diffSorted(records: readonly DatasetRecord[], snapshot: SnapshotReader, options: DiffOptions): Changeset {
  const sink = new MemorySink();
  const entries = records.map((r): SourceEntry => ({ record_id: r.record_id, line: 0, json: recordJson(r) }));
  const steps = mergeJoin(entries, snapshot, options, sink);
  for (;;) {
    const step = steps.next();
    if (step.done) return sink.changeset(entries, step.value);
  }
}

/** Records between pauses of the merge, so a large diff does not block the event loop. */
const SLICE = 10_000;

/** What a sorted source knows of its entries (SortedSource): the merge-join reads them faster with it. */
export interface SourceFacts {
  /** The attribute key lists of the entries' value flags; an entry without readable flags has its values read from its text. */
  shapes?: readonly (readonly string[])[];
  /** Every record_id is plain (isPlainId): compared with one that is, `<` is byte order (compareIds' fast case). */
  plain?: boolean;
}

/**
 * The merge-join of source entries and the snapshot, both in record_id byte
 * order, into `sink`; it yields every SLICE records so a caller can let the
 * event loop run, and returns the summary.
 */
export function* mergeJoin(
  source: Iterable<SourceEntry>,
  snapshot: SnapshotReader,
  options: DiffOptions,
  sink: ChangesetSink,
  facts: SourceFacts = {},
): Generator<void, Omit<ChangesetSummary, 'head'>> {
  const shapes = facts.shapes ?? [];
  const cmp = facts.plain ? plainCompare : compareIds;
  const keep = options.onForeignEdit === 'keep';
  const foreignEdits: ForeignEditNote[] = [];
  const tallier = new ValueTallier(options.values ?? []);
  const digest = createHash('sha256');
  let sourceCount = 0;
  let snapshotCount = 0;
  let snapshotOwned = 0;
  let unchanged = 0;
  let adds = 0;
  let changes = 0;
  let deletes = 0;
  let adopted = 0;
  let notOwned = 0;
  let notOwnedDeletes = 0;
  // Field values changed, per field (an attribute per key): what the fields compared below already say, counted.
  const fieldsChanged = new Map<string, number>();
  const counted = (f: string) => fieldsChanged.set(f, (fieldsChanged.get(f) ?? 0) + 1);

  const it = source[Symbol.iterator]();
  let prev: string | null = null;
  const next = (): SourceEntry | null => {
    const r = it.next();
    if (r.done) return null;
    const e = r.value;
    if (prev !== null && cmp(prev, e.record_id) >= 0) {
      if (prev === e.record_id) {
        throw new ConnectorError('DUPLICATE_RECORD_ID', `The source has record_id ${e.record_id} more than once.`, {
          action: 'reject',
          context: { record_id: e.record_id },
        });
      }
      throw new TypeError(`the source is not sorted by record_id (${prev} before ${e.record_id})`);
    }
    prev = e.record_id;
    sourceCount++;
    return e;
  };
  const add = (e: SourceEntry): void => {
    sink.add(e);
    adds++;
    digest.update(`a\0${e.record_id}\0${textHash(e.json)}\n`);
  };
  const drop = (e: SnapshotEntry): void => {
    if (e.owned || options.ownership === 'full') {
      sink.delete({ record_id: e.record_id, owned: e.owned });
      deletes++;
      if (!e.owned) notOwnedDeletes++;
      digest.update(`d\0${e.record_id}\n`);
    } else {
      notOwned++; // issue 7: not ours, never changed or deleted
    }
  };

  let s = next();
  for (const e of snapshot.entries()) {
    if (++snapshotCount % SLICE === 0) yield;
    if (e.owned) snapshotOwned++;
    while (s !== null && cmp(s.record_id, e.record_id) < 0) {
      add(s);
      s = next();
      if (sourceCount % SLICE === 0) yield;
    }
    if (s === null || s.record_id !== e.record_id) {
      drop(e);
      continue;
    }
    const src = s;
    s = next();
    if (!e.owned) {
      sink.adopt(e.record_id);
      adopted++;
      digest.update(`o\0${e.record_id}\n`);
    }
    if (src.json === e.json) {
      // Equal text, equal record: the source's flags are the snapshot record's.
      if (src.flags === undefined || !tallier.comparedFlags(src.flags, shapes)) tallier.comparedJson(e.json);
      unchanged++;
      continue;
    }
    const rec = src.record ?? (JSON.parse(src.json) as DatasetRecord);
    let desired = rec;
    const before = e.record ?? (JSON.parse(e.json) as DatasetRecord);
    tallier.compared(before);
    if (e.owned && e.foreignFields.length > 0) {
      const touched = e.foreignFields.filter((f) => canonicalJson(before[f]) !== canonicalJson(rec[f]));
      if (touched.length > 0) foreignEdits.push({ record_id: e.record_id, fields: touched, resolution: keep ? 'keep' : 'overwrite' });
      if (keep) {
        desired = applyKeptFields(rec, before, e.foreignFields);
        sink.desired(e.record_id, desired);
      }
    }
    const fields: RecordField[] = changedFields(before, desired);
    if (fields.length === 0) {
      unchanged++;
      continue;
    }
    // The source's text is the record's when no kept field replaced it (the sink writes it, not a second serialisation).
    const text = desired === rec ? src.json : recordJson(desired);
    sink.change({ record_id: e.record_id, fields, patch: patchOf(desired, fields), record: desired, adopted: !e.owned }, src.line, desired === rec ? src.json : undefined);
    tallier.observe(before, desired, fields);
    for (const f of fields) {
      if (f === 'attributes') changedAttributes(before.attributes, desired.attributes, counted);
      else counted(f);
    }
    changes++;
    digest.update(`c\0${e.record_id}\0${fields.join(',')}\0${textHash(text)}\n`);
  }
  while (s !== null) {
    add(s);
    s = next();
    if (sourceCount % SLICE === 0) yield;
  }

  const counts: ChangesetCounts = {
    source: sourceCount,
    snapshot: snapshotCount,
    snapshotOwned,
    adds,
    changes,
    deletes,
    unchanged,
    adopted,
    owned: sourceCount,
    notOwned,
    notOwnedDeletes,
    deletable: options.ownership === 'full' ? snapshotCount : snapshotOwned + adopted,
    result: sourceCount + notOwned,
  };
  return { ownership: options.ownership, counts, digest: digest.digest('hex'), foreignEdits, values: tallier.tally(), fieldsChanged: Object.fromEntries(fieldsChanged) };
}

/** Each attribute key whose value differs (attribute values are scalars: compared as they are), named attributes.<key>. */
function changedAttributes(before: DatasetRecord['attributes'], after: DatasetRecord['attributes'], counted: (field: string) => void): void {
  for (const k in after) if (!(k in before) || before[k] !== after[k]) counted(`attributes.${k}`);
  for (const k in before) if (!(k in after)) counted(`attributes.${k}`);
}

/** The changeset as arrays (diffSorted). */
class MemorySink implements ChangesetSink {
  readonly adds: DatasetRecord[] = [];
  readonly changes: RecordChange[] = [];
  readonly deletes: RecordDelete[] = [];
  readonly adopted: string[] = [];
  readonly #desired = new Map<string, DatasetRecord>();

  add(e: SourceEntry): void {
    this.adds.push(JSON.parse(e.json) as DatasetRecord);
  }
  change(c: RecordChange): void {
    this.changes.push(c);
  }
  delete(d: RecordDelete): void {
    this.deletes.push(d);
  }
  adopt(recordId: string): void {
    this.adopted.push(recordId);
  }
  desired(recordId: string, record: DatasetRecord): void {
    this.#desired.set(recordId, record);
  }

  changeset(entries: readonly SourceEntry[], summary: Omit<ChangesetSummary, 'head'>): Changeset {
    const records: RecordText[] = entries.map((e) => {
      const d = this.#desired.get(e.record_id);
      return { record_id: e.record_id, json: d ? recordJson(d) : e.json };
    });
    const head: ChangesetHead = {
      adds: this.adds.slice(0, HEAD_OPERATIONS),
      changes: this.changes.slice(0, HEAD_OPERATIONS),
      deletes: this.deletes.slice(0, HEAD_OPERATIONS),
    };
    const addTexts = this.adds.map((r) => ({ record_id: r.record_id, json: recordJson(r) }));
    return { ...summary, head, records, adds: this.adds, addTexts, changes: this.changes, deletes: this.deletes, adopted: this.adopted };
  }
}

/** The upserts (as canonical JSON), deletes and adoptions to confirm once the server published this changeset (each iterable again). */
export function confirmedParts(changeset: Changeset): { upsertTexts: Iterable<RecordText & { line?: number }>; deletes: Iterable<string>; own: Iterable<string> } {
  return {
    upsertTexts: {
      *[Symbol.iterator]() {
        yield* changeset.addTexts;
        for (const c of changeset.changes) yield { record_id: c.record_id, json: recordJson(c.record), ...(c.line ? { line: c.line } : {}) };
      },
    },
    deletes: {
      *[Symbol.iterator]() {
        for (const d of changeset.deletes) yield d.record_id;
      },
    },
    own: changeset.adopted,
  };
}
