import type { DatasetRecord } from '../model/record.js';

/** Roles a dataset key can carry. */
export const ROLES = ['read', 'write', 'replace', 'publish'] as const;
export type Role = (typeof ROLES)[number];

/** A18: statuses of a content version. */
export type VersionStatus = 'active' | 'draft' | 'superseded' | 'discarded' | 'expired';

/** A15: statuses of a sync job. */
export type JobStatus = 'QUEUED' | 'RUNNING' | 'PUBLISHED' | 'STAGED' | 'FAILED';
export const TERMINAL_JOB_STATUSES: readonly JobStatus[] = ['PUBLISHED', 'STAGED', 'FAILED'];

/** A15/A19: change counts. */
export interface ChangeCounts {
  added: number;
  changed: number;
  deleted: number;
}

/** A3: one row error. */
export interface RowError {
  row: number;
  record_id: string | null;
  field: string;
  message: string;
}

/** A19: one sample item of a version detail. */
export interface SampleItem {
  op: 'add' | 'change' | 'delete';
  record: DatasetRecord;
}

/** A15: the job as sent on the wire. */
export interface WireJob {
  job_id: string;
  status: JobStatus;
  version: number | null;
  counts: ChangeCounts;
  errors: RowError[];
  reason: string | null;
  created_at: string;
  updated_at: string;
}

/** A13: options of replace and upload. */
export interface ReplaceOptions {
  publish: boolean;
  allow_mass_delete: boolean;
  allow_empty: boolean;
}

/** A20: options of publish. */
export interface GuardOptions {
  allow_mass_delete?: boolean;
  allow_empty?: boolean;
}
