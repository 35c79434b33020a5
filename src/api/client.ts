import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { systemClock, type Clock } from '../clock.js';
import type { DatasetRecord, RecordPatch } from '../model/record.js';
import { canonicalJson } from '../model/canonical.js';
import { importForm, pickOptions, pickPatch, pickRecord, replaceBody, type StreamedBody } from './bodies.js';
import type {
  JobWriteOpts,
  ListRecordsOpts,
  ReadOpts,
  RecordPageWithEtag,
  UploadFields,
  UploadFile,
  WaitForJobOpts,
  WithEtag,
  WriteOpts,
} from './options.js';
import type { Secret } from '../secret.js';
import { ApiError, CLIENT_CODES } from './errors.js';
import { Transport, type ClientStats, type HttpRequest, type RequestEvent } from './http.js';
import { limiterFor, type SharedRateWindow } from './rate-limiter.js';
import { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.js';
import {
  TERMINAL_JOB_STATUSES,
  datasetSchema,
  jobEnvelopeSchema,
  publishResultSchema,
  recordPageSchema,
  singleRecordSchema,
  versionDetailSchema,
  versionListSchema,
  writeResultSchema,
  type Dataset,
  type Job,
  type PublishOptions,
  type PublishResult,
  type ReplaceOptions,
  type VersionDetail,
  type VersionList,
  type WriteResult,
} from './wire.js';

export type * from './options.js';

/** Settings of one client: one dataset, one key. */
export interface DatasetClientOptions {
  /** Service base, e.g. http://127.0.0.1:8787 (a path prefix is kept). */
  baseUrl: string;
  datasetId: string;
  key: Secret;
  /** Client-side cap per rolling minute, shared by every client of this key (default 100; the server allows 120, A24). */
  ratePerMinute?: number;
  /**
   * The window of request slots shared with the other processes of this
   * machine (StateDb.rateWindow), so that together they keep under
   * `ratePerMinute`; absent, the cap holds in this process only.
   */
  rateWindow?: SharedRateWindow;
  retry?: Partial<RetryPolicy>;
  /** Default 10 s. */
  connectTimeoutMs?: number;
  /** Whole request, headers and body (default 60 s: a large replace body is parsed before the 202). */
  requestTimeoutMs?: number;
  clock?: Clock;
  logger?: Logger;
  /** Called after every attempt (metrics). */
  onRequest?: (e: RequestEvent) => void;
  /**
   * After a 401, read the key's source again (e.g. `rereadKey` of
   * src/config/key.ts): a different key is tried by sending the request again
   * once, and kept unless that answer refuses it too (401, 403, 404
   * DATASET_NOT_FOUND: then the previous key stays, and the next 401 reads the
   * source again); undefined keeps the 401. For a key reissued with a grace period.
   */
  rereadKey?: (current: Secret) => Promise<RereadKey | undefined>;
}

/** What reading a key's source again found: the key, where it came from and warnings about it (never the key in those). */
export interface RereadKey {
  secret: Secret;
  from?: string;
  location?: string;
  warnings?: readonly string[];
}

/** Typed client of the Business Dataset Editing API for one dataset and one key. */
export class DatasetClient {
  readonly datasetId: string;
  /** The service base as the settings name it, trailing slashes dropped (with datasetId, the server dataset this client edits). */
  readonly baseUrl: string;
  readonly #t: Transport;
  readonly #clock: Clock;

  constructor(opts: DatasetClientOptions) {
    this.datasetId = opts.datasetId;
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.#clock = opts.clock ?? systemClock;
    const rate = opts.ratePerMinute ?? 100;
    const reread = opts.rereadKey;
    this.#t = new Transport({
      baseUrl: opts.baseUrl,
      datasetId: opts.datasetId,
      key: opts.key,
      limiter: limiterFor(opts.key, rate, this.#clock, opts.rateWindow),
      ...(reread
        ? {
            rereadKey: async (current: Secret) => {
              const next = await reread(current);
              if (!next) return undefined;
              const source = [next.from, next.location].filter(Boolean).join(' ');
              return {
                key: next.secret,
                limiter: limiterFor(next.secret, rate, this.#clock, opts.rateWindow),
                ...(source ? { source } : {}),
                warnings: next.warnings ?? [],
              };
            },
          }
        : {}),
      policy: { ...DEFAULT_RETRY_POLICY, ...opts.retry },
      clock: this.#clock,
      connectTimeoutMs: opts.connectTimeoutMs ?? 10_000,
      requestTimeoutMs: opts.requestTimeoutMs ?? 60_000,
      ...(opts.logger ? { logger: opts.logger } : {}),
      ...(opts.onRequest ? { onRequest: opts.onRequest } : {}),
    });
  }

  /** Fingerprint of the key in use now (it changes when a key read again after a 401 is kept); never the key. */
  get keyId(): string {
    return this.#t.keyId;
  }

  /** Counters since this client was made (requests sent, retries, 429s, waits). A copy. */
  get stats(): ClientStats {
    return { ...this.#t.stats };
  }

  /** A25: dataset metadata (record count, active and draft version). */
  async getDataset(opts: ReadOpts = {}): Promise<WithEtag<Dataset>> {
    return this.#call({ method: 'GET', path: '', safe: true, ...sig(opts) }, datasetSchema);
  }

  /** A7: every record, page after page, in record_id order. */
  async *listRecords(opts: ListRecordsOpts = {}): AsyncIterable<DatasetRecord> {
    for await (const page of this.listRecordPages(opts)) yield* page.records;
  }

  /** A7/A8: the pages of `GET /records`, each with its ETag (a change of ETag between pages means a publish happened meanwhile). */
  async *listRecordPages(opts: ListRecordsOpts = {}): AsyncIterable<RecordPageWithEtag> {
    let cursor: string | undefined;
    for (;;) {
      const req: HttpRequest = {
        method: 'GET',
        path: '/records',
        query: { limit: opts.limit ?? 1000, cursor, source: opts.source },
        safe: true,
        ...sig(opts),
      };
      const { value, etag } = await this.#call(req, recordPageSchema);
      yield { records: value.records, nextCursor: value.nextCursor, etag };
      if (value.nextCursor === null) return;
      if (value.nextCursor === cursor) {
        throw new ApiError({ status: 200, code: CLIENT_CODES.BAD_RESPONSE, message: 'GET /records repeated its cursor', method: 'GET', path: '/records' });
      }
      cursor = value.nextCursor;
    }
  }

  /** A31: one record. */
  async getRecord(recordId: string, opts: ReadOpts = {}): Promise<WithEtag<DatasetRecord>> {
    return this.#call({ method: 'GET', path: `/records/${encodeURIComponent(recordId)}`, safe: true, ...sig(opts) }, singleRecordSchema);
  }

  /**
   * A9/A33: add a record. Never re-sent after it may have reached the server:
   * a lost answer throws OUTCOME_UNKNOWN and the caller re-reads the record.
   */
  async createRecord(record: DatasetRecord, opts: WriteOpts = {}): Promise<WithEtag<WriteResult>> {
    return this.#call({ method: 'POST', path: '/records', json: pickRecord(record), safe: false, ...writeParts(opts) }, writeResultSchema);
  }

  /**
   * A9/A33: change the given fields (each replaced whole). Repeated after a
   * lost answer; see `withRetryKey` for why it carries an Idempotency-Key.
   */
  async patchRecord(recordId: string, patch: RecordPatch, opts: WriteOpts = {}): Promise<WithEtag<WriteResult>> {
    const req: HttpRequest = {
      method: 'PATCH',
      path: `/records/${encodeURIComponent(recordId)}`,
      json: pickPatch(patch),
      safe: true,
      ...writeParts(withRetryKey(opts)),
    };
    return this.#call(req, writeResultSchema);
  }

  /** A9: delete a record. Repeated after a lost answer, with an Idempotency-Key (`withRetryKey`). */
  async deleteRecord(recordId: string, opts: WriteOpts = {}): Promise<WithEtag<WriteResult>> {
    return this.#call({ method: 'DELETE', path: `/records/${encodeURIComponent(recordId)}`, safe: true, ...writeParts(withRetryKey(opts)) }, writeResultSchema);
  }

  /** A13/A15: replace every record (202 with a job; wait for it with waitForJob). */
  async replaceRecords(records: DatasetRecord[], options: ReplaceOptions, opts: JobWriteOpts): Promise<WithEtag<Job>> {
    const texts = () => records.map((r) => ({ json: canonicalJson(pickRecord(r)) }));
    return this.replaceRecordsStreamed(replaceBody(texts, options).body, opts);
  }

  /**
   * A13/A15: replace every record with a body streamed from disk (`replaceBody`
   * of bodies.ts: canonical JSON of the six fields, measured beforehand), so a
   * million records never sit in memory at once.
   */
  async replaceRecordsStreamed(body: StreamedBody, opts: JobWriteOpts): Promise<WithEtag<Job>> {
    const req: HttpRequest = {
      method: 'PUT',
      path: '/records',
      stream: body,
      // A16: the Idempotency-Key makes a repeat answer with the same job. Assumed: Idempotency-Keys are
      // scoped to the dataset, not to the API key, so a repeat sent with a key read again after a 401
      // (http.ts) still meets the first attempt's job.
      safe: true,
      ...jobParts(opts),
    };
    return this.#call(req, jobEnvelopeSchema);
  }

  /** A14/A15: upload a CSV or XLSX file (202 with a job). */
  async importFile(file: UploadFile, fields: UploadFields, opts: JobWriteOpts): Promise<WithEtag<Job>> {
    const form = await importForm(file, fields);
    return this.#call({ method: 'POST', path: '/imports', form, safe: true, ...jobParts(opts) }, jobEnvelopeSchema);
  }

  /** A18: versions, newest first, with the active version. */
  async listVersions(opts: ReadOpts = {}): Promise<WithEtag<VersionList>> {
    return this.#call({ method: 'GET', path: '/versions', safe: true, ...sig(opts) }, versionListSchema);
  }

  /** A19: counts and the first changes of a version. */
  async getVersion(version: number, opts: ReadOpts = {}): Promise<WithEtag<VersionDetail>> {
    return this.#call({ method: 'GET', path: `/versions/${version}`, safe: true, ...sig(opts) }, versionDetailSchema);
  }

  /**
   * A20: publish a pending draft. Repeated after a lost answer only when an
   * Idempotency-Key is given (A35); without one a lost answer is OUTCOME_UNKNOWN.
   */
  async publishVersion(
    version: number,
    options: PublishOptions = {},
    opts: { idempotencyKey?: string; ifMatch?: string; signal?: AbortSignal } = {},
  ): Promise<WithEtag<PublishResult>> {
    const picked = pickOptions(options);
    const req: HttpRequest = {
      method: 'POST',
      path: `/versions/${version}/publish`,
      json: Object.keys(picked).length > 0 ? { options: picked } : {},
      safe: opts.idempotencyKey !== undefined,
      ...writeParts(opts),
    };
    return this.#call(req, publishResultSchema);
  }

  /** A21: discard a pending draft (204). */
  async discardVersion(version: number, opts: { idempotencyKey?: string; signal?: AbortSignal } = {}): Promise<WithEtag<null>> {
    const res = await this.#t.send({ method: 'DELETE', path: `/versions/${version}`, safe: true, ...writeParts(opts) });
    return { value: null, etag: res.etag, replayed: res.replayed };
  }

  /** A32: one job. */
  async getJob(jobId: string, opts: ReadOpts = {}): Promise<WithEtag<Job>> {
    return this.#call({ method: 'GET', path: `/sync-jobs/${encodeURIComponent(jobId)}`, safe: true, ...sig(opts) }, jobEnvelopeSchema);
  }

  /** Poll a job with growing intervals until PUBLISHED, STAGED or FAILED (spec: "The caller polls until one of the three"). */
  async waitForJob(jobId: string, opts: WaitForJobOpts = {}): Promise<Job> {
    const maxPoll = opts.maxPollMs ?? 15_000;
    let interval = Math.min(opts.pollMs ?? 1_000, maxPoll);
    const deadline = opts.timeoutMs === undefined ? Infinity : this.#clock.now() + opts.timeoutMs;
    for (;;) {
      const { value: job } = await this.getJob(jobId, sig(opts));
      if (TERMINAL_JOB_STATUSES.includes(job.status)) return job;
      if (this.#clock.now() + interval > deadline) {
        throw new ApiError({
          status: null,
          code: CLIENT_CODES.TIMEOUT,
          message: `job ${jobId} still ${job.status} after ${opts.timeoutMs} ms`,
          context: { job_id: jobId },
        });
      }
      try {
        await this.#clock.sleep(interval, opts.signal);
      } catch (cause) {
        throw new ApiError({ status: null, code: CLIENT_CODES.ABORTED, message: `waiting for job ${jobId} aborted`, cause, context: { job_id: jobId } });
      }
      interval = Math.min(Math.ceil(interval * 1.5), maxPoll);
    }
  }

  /** Close the connection pool. The shared limiter stays (other clients of the key may use it). */
  async close(): Promise<void> {
    await this.#t.close();
  }

  async #call<T>(req: HttpRequest, schema: z.ZodType<T>): Promise<WithEtag<T>> {
    const res = await this.#t.send(req);
    const value = this.#t.parse(req, res, schema);
    return { value, etag: res.etag, replayed: res.replayed };
  }
}

function sig(o: { signal?: AbortSignal }): { signal?: AbortSignal } {
  return o.signal ? { signal: o.signal } : {};
}

function writeParts(o: { publish?: boolean; ifMatch?: string; idempotencyKey?: string; onlyKey?: string; signal?: AbortSignal }): Partial<HttpRequest> {
  return {
    ...(o.onlyKey !== undefined ? { onlyKey: o.onlyKey } : {}),
    // A34: send only what the contract names, so `publish` appears only when false.
    ...(o.publish === false ? { query: { publish: 'false' } } : {}),
    ...(o.ifMatch ? { ifMatch: o.ifMatch } : {}),
    ...(o.idempotencyKey ? { idempotencyKey: o.idempotencyKey } : {}),
    ...sig(o),
  };
}

/**
 * PATCH and DELETE are repeated after a lost answer. Without a key, a repeat
 * of an applied write meets 412 (its If-Match is stale now) or 404 (the record
 * is gone); with one the server replays the first answer (A35). So when the
 * caller gives none, one is made per call and reused by its retries, also by
 * a resend with a key read again after a 401: Idempotency-Keys are assumed
 * scoped to the dataset, not to the API key that sent them.
 */
function withRetryKey<T extends WriteOpts>(o: T): T {
  return o.idempotencyKey ? o : { ...o, idempotencyKey: `dc-${randomUUID()}` };
}

function jobParts(o: JobWriteOpts): Partial<HttpRequest> {
  if (!o.idempotencyKey) {
    throw new ApiError({ status: null, code: 'INVALID_ARGUMENT', message: 'replace and upload need an Idempotency-Key' });
  }
  return writeParts(o);
}
