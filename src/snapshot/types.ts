import type { RecordText } from '../model/record-json.js';
import type { Provenance } from './history-writer.js';
import type { TallyDelta } from './tallies.js';
import type { DatasetRecord, RecordField } from '../model/record.js';

/** Identity of a processed source export: files are known by content hash, not path. */
export interface SourceIdentity {
  fileHash: string;
  rowCount: number;
  /** When it was processed, ms since the epoch. */
  at: number;
}

/** A change kept as a draft or unsent, waiting for a person or a later run. */
export interface HeldDraft {
  /** guard: a guard held it; publish_required: the key cannot publish; staged: staged, publish pending; foreign_draft: someone else's draft blocks us. */
  kind: 'guard' | 'publish_required' | 'staged' | 'foreign_draft';
  /** The draft version on the server, or null when nothing was sent. */
  version: number | null;
  reason: string;
  planId: string | null;
  /** A JSON-serialisable summary (counts, guard results) for status and approve. */
  summary: unknown;
  /** ms since the epoch. */
  since: number;
}

/** The server dataset a snapshot mirrors (migration 20): the service base (trailing slashes dropped) and the dataset id. */
export interface ServerIdentity {
  baseUrl: string;
  datasetId: string;
}

/** What the state database knows about one dataset. */
export interface SnapshotInfo {
  dataset: string;
  /** Active version the snapshot was confirmed at; null before the first confirmation (first run). */
  activeVersion: number | null;
  /** ETag of that version, e.g. "v12". */
  etag: string | null;
  confirmedAt: number | null;
  recordCount: number;
  ownedCount: number;
  notOwnedCount: number;
  /** The last export processed; its fileHash is null once forgotten (forgetSourceHash), its row count stays the row-drop guard's base. */
  lastSource: (Omit<SourceIdentity, 'fileHash'> & { fileHash: string | null }) | null;
  /** Last measured replace/import job: duration and record count. */
  lastJob: { ms: number; records: number } | null;
  lastOutcome: { outcome: string; detail: unknown; at: number } | null;
  held: HeldDraft | null;
  rebuiltAt: number | null;
}

/** SnapshotInfo without the record counts: what a sync reads (counting a million records reads the whole table). */
export type SnapshotState = Omit<SnapshotInfo, 'recordCount' | 'ownedCount' | 'notOwnedCount'>;

/** Which kind of write a key showed its staging on: per-record writes, or replace and upload jobs (A12 names only the first). */
export type KeyChannel = 'records' | 'jobs';

/** What a key did when asked to stage: made a draft, or published at once (a legacy key, A12); null: not shown yet. */
export type KeyShown = 'stages' | 'publishes' | null;

/** A set of changes the server confirmed (write result published, job PUBLISHED, publish 200). */
export interface ConfirmedChange {
  activeVersion: number;
  /** Default `"v<activeVersion>"` (A8). */
  etag?: string | null;
  /** Records now published as written by the connector; they become owned. */
  upserts?: Iterable<DatasetRecord>;
  /** The same as canonical JSON (record-json.ts): no record to parse and serialise again; `line`: its line in the export. */
  upsertTexts?: Iterable<RecordText & { line?: number }>;
  /** record_ids now deleted on the server. */
  deletes?: Iterable<string>;
  /** record_ids adopted as owned without a write (first-run adoption, issue 7). */
  own?: Iterable<string>;
  /** The export this change came from, when it completes a sync. */
  source?: SourceIdentity;
  /** Where the change came from, for its history row (issue 14); default: a sync, nothing more known. */
  provenance?: Provenance;
  /**
   * Issue 18: what upsertTexts add to the tallies, each counted as an owned record added (TallyAhead), worked out
   * before the confirm. Taken only when the dataset has no records as the confirm begins and every upsert is
   * inserted; otherwise the tallies are counted again from the records, so a wrong hint costs time, never a count.
   */
  tallyAhead?: TallyDelta | null;
}

/** One record of the stored snapshot. */
export interface StoredRecord {
  record: DatasetRecord;
  hash: string;
  owned: boolean;
  foreignFields: RecordField[];
}

/** What a rebuild from the server found. */
export interface RebuildReport {
  records: number;
  /** On the server, not in the old snapshot. */
  added: number;
  /** In the old snapshot, gone from the server. */
  removed: number;
  /** Present in both with different content. */
  changed: number;
  /** Owned records edited on the server: which fields (issue 7). */
  foreignEdits: Array<{ record_id: string; fields: RecordField[] }>;
  /** Owned records deleted on the server. */
  ownedRemoved: number;
}
