import type { DatasetRecord } from '../model/record.js';
import type { ReplaceOptions } from './wire.js';

/** Option and result shapes of DatasetClient's methods. */

/** A value with the ETag of the answer that carried it (A8/A9: `"v<active>"`, or null when absent). */
export interface WithEtag<T> {
  value: T;
  etag: string | null;
  /** A35: the server replayed an earlier answer for the same Idempotency-Key. */
  replayed: boolean;
}

/** Options of a single-record write. */
export interface WriteOpts {
  /** false → `?publish=false`: the write goes into the pending draft (A10). */
  publish?: boolean;
  /** `If-Match`: the active-version ETag the change was planned against. */
  ifMatch?: string;
  /** A35: optional on record writes. It does not make POST /records repeatable (see createRecord); PATCH and DELETE make one when absent. */
  idempotencyKey?: string;
  /** Send only with the key of this fingerprint (HttpRequest.onlyKey). */
  onlyKey?: string;
  signal?: AbortSignal;
}

/** Options of replace and upload: the Idempotency-Key is required, persisted by the caller before sending. */
export interface JobWriteOpts {
  idempotencyKey: string;
  ifMatch?: string;
  /** Send only with the key of this fingerprint (HttpRequest.onlyKey). */
  onlyKey?: string;
  signal?: AbortSignal;
}

/** Options of reads. */
export interface ReadOpts {
  signal?: AbortSignal;
}

/** The file of an upload: bytes in memory or a path read lazily. */
export interface UploadFile {
  bytes?: Uint8Array;
  path?: string;
  filename: string;
  /** e.g. text/csv or application/vnd.openxmlformats-officedocument.spreadsheetml.sheet */
  contentType?: string;
}

/** A14: the other fields of an upload. */
export interface UploadFields {
  /** Record field → column header; sent as JSON text. */
  mapping?: Record<string, string>;
  sheet?: string;
  encoding?: string;
  options?: ReplaceOptions;
}

/** One page of `GET /records` with the ETag it was read at. */
export interface RecordPageWithEtag {
  records: DatasetRecord[];
  nextCursor: string | null;
  etag: string | null;
}

/** Options of the record listing. */
export interface ListRecordsOpts {
  /** Page size (A7: at most 1000; the client asks for 1000 by default to spend fewer requests). */
  limit?: number;
  /** `draft` lists the pending draft's records. */
  source?: 'draft';
  signal?: AbortSignal;
}

/** Options of `waitForJob`. */
export interface WaitForJobOpts {
  signal?: AbortSignal;
  /** First poll interval (default 1000 ms), growing ×1.5 per poll. */
  pollMs?: number;
  /** Largest poll interval (default 15 000 ms). */
  maxPollMs?: number;
  /** Give up with TIMEOUT after this long (default: wait as long as it takes). */
  timeoutMs?: number;
}
