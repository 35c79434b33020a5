import type { DatasetRecord, RecordField, RecordPatch } from '../../model/record.js';
import type { OwnershipMode } from '../../config/policy.js';

/** A record whose published content differs from the source. */
export interface RecordChange {
  record_id: string;
  /** The top-level fields that change (A33: aliases and attributes whole). */
  fields: RecordField[];
  /** PATCH body: only `fields`. */
  patch: RecordPatch;
  /** The whole record as it should be published (for replace bodies and confirm). */
  record: DatasetRecord;
  /** It was not owned before: adopted by this sync (issue 7). */
  adopted: boolean;
  /** Its 1-based line in the export, when known (for the history, issue 14). */
  line?: number;
}

/** A record to delete. */
export interface RecordDelete {
  record_id: string;
  /** The connector owned it; false only in ownership: full. */
  owned: boolean;
}

/** An owned record someone else edited on the server, and what this sync does about it (issue 7). */
export interface ForeignEditNote {
  record_id: string;
  fields: RecordField[];
  resolution: 'overwrite' | 'keep';
}

/** Counts of a changeset; the planner, the guards and the summary read these. */
export interface ChangesetCounts {
  /** Records in the source export (after mapping). */
  source: number;
  /** Records in the snapshot (the published dataset as last confirmed). */
  snapshot: number;
  /** Snapshot records the connector owned before this sync. */
  snapshotOwned: number;
  adds: number;
  changes: number;
  deletes: number;
  unchanged: number;
  /** Not-owned snapshot records whose record_id the source contains, now owned. */
  adopted: number;
  /** Records the connector owns after this sync (= source). */
  owned: number;
  /** Records the connector does not own and leaves alone (carried over by a replace); 0 in ownership: full. */
  notOwned: number;
  /** Deletes of records the connector did not own (ownership: full only). */
  notOwnedDeletes: number;
  /** Records the sync may delete: owned + adopted (source) or every snapshot record (full). The delete-ratio base. */
  deletable: number;
  /** Records in the dataset after the sync: source + notOwned. */
  result: number;
}

export type { RecordText } from '../../model/record-json.js';
import type { RecordText } from '../../model/record-json.js';

/** One source record as the diff reads it: id, file line and canonical JSON (record-json.ts). */
export interface SourceEntry {
  record_id: string;
  line: number;
  json: string;
  /** The value guards' base flags of the record (ValueFlagsWriter, record-values.ts), when its sort wrote them. */
  flags?: string;
  /** JSON.parse of `json`, key for key (parsesBackAs), when the stage before had it at hand and it was kept in memory: read, never changed. */
  record?: DatasetRecord;
}

/** Where the merge of a diff puts what it finds (diff.ts): arrays in memory, or files (sync/disk/changeset-files.ts). */
export interface ChangesetSink {
  add(e: SourceEntry): void;
  /** `recordText`: c.record as JSON text, when the caller has it (JSON.parse of it gives c.record). */
  change(c: RecordChange, line: number, recordText?: string): void;
  delete(d: RecordDelete): void;
  adopt(recordId: string): void;
  /** The record to publish differs from the source's (kept foreign fields): replace bodies send this one. */
  desired(recordId: string, record: DatasetRecord): void;
}

/** The first operations of a changeset, held in memory for display (`plan`); the rest stay where the changeset is. */
export interface ChangesetHead {
  adds: DatasetRecord[];
  changes: RecordChange[];
  deletes: RecordDelete[];
}

/** Operations kept in a ChangesetHead, of each kind. */
export const HEAD_OPERATIONS = 100;

/** What a changeset is without its records: small, serialised into the plan file. */
export interface ChangesetSummary {
  ownership: OwnershipMode;
  counts: ChangesetCounts;
  /** sha256 over every operation: equal changesets have equal digests. */
  digest: string;
  foreignEdits: ForeignEditNote[];
  head: ChangesetHead;
  /** What the changed records did to field values, for the value guards (issue 14); absent in plans made before them. */
  values?: ValueTally;
  /** Per field (an attribute as attributes.<key>), the records that existed whose value of it changed; absent in plans made before it. */
  fieldsChanged?: Record<string, number>;
}

/**
 * The difference between the source and the snapshot. Each list is in
 * record_id byte order and can be iterated again; a large one is read from
 * disk as it is iterated (changeset-files.ts), a small one may be an array.
 */
export interface Changeset extends ChangesetSummary {
  /** The desired owned records (kept foreign fields applied), as canonical JSON. Not serialised into plans. */
  records: Iterable<RecordText>;
  adds: Iterable<DatasetRecord>;
  /** The adds as canonical JSON, as they are on disk (confirm needs no record objects), with their export line where known. */
  addTexts: Iterable<RecordText & { line?: number }>;
  changes: Iterable<RecordChange>;
  deletes: Iterable<RecordDelete>;
  /** record_ids adopted as owned (for StateDb confirm's `own`). */
  adopted: Iterable<string>;
  /** The folder its lists are read from, when on disk (changeset-files.ts). */
  folder?: string;
  /**
   * An indexed diff's (issue 13, listed-share.ts): the snapshot records it read, in record_id order. `records`
   * then holds the desired records of these only; every other snapshot record is desired as it is.
   */
  listed?: Iterable<string>;
}

// Issue 14 (value-guards.ts): what the diff tallies of field values, kept in the changeset summary.

/** A record's value of a field before and after. */
export interface ValueSample {
  record_id: string;
  old: unknown;
  new: unknown;
}

/** Per field: how many compared records changed it, set it to zero or empty, or made it jump; five samples of each. */
export interface FieldTally {
  changed: number;
  zeroed: number;
  jumped: number;
  /** Compared records whose value before could be zeroed (not zero or empty): the zeroed guard's base; absent in older plans. */
  zeroable?: number;
  /** Compared records whose value before was a non-zero number: the jump guard's base; absent in older plans. */
  nonzero?: number;
  samples: { changed: ValueSample[]; zeroed: ValueSample[]; jumped: ValueSample[] };
}

/** What a diff saw of field values; `fields` only has fields some record changed. */
export interface ValueTally {
  fields: Record<string, FieldTally>;
}
