import { validateRecord, type DatasetRecord } from '../model/record.js';
import { EmulatorClock } from './clock.js';
import { DatasetState, type VersionState } from './dataset-state.js';
import { sortedRecords } from './diff.js';
import { FaultInjector } from './faults.js';
import { httpError } from './http-error.js';
import { IdempotencyStore } from './idempotency.js';
import { JobStore } from './jobs.js';
import { KeyRegistry } from './keys.js';
import { SlidingWindowLimiter } from './rate-limit.js';
import type { RequestLogEntry } from './request-log.js';
import type { Role, WireJob } from './types.js';

/** Counters tests assert on ("no duplicate job or write"). */
export interface EmulatorCounters {
  jobsCreated: number;
  /** Single-record writes applied (POST/PATCH/DELETE /records), replays excluded. */
  recordWrites: number;
  publishes: number;
  discards: number;
  replays: number;
}

/** Behaviour settings that tests and the CLI may change at any time. */
export interface EmulatorSettings {
  /** Emulator-clock milliseconds a replace/upload job takes (0: done on the next request). */
  jobDurationMs: number;
  /** A24: requests per sliding minute per key. */
  rateLimitPerMinute: number;
  /** Row errors of replace/upload: a FAILED job (A15, default) or a synchronous 422 (A3). */
  rowErrors: 'job' | 'sync';
  /**
   * A12 names write results only. `publish` (default): a legacy key's replace and upload jobs
   * publish too, although `options.publish` is false (A12 read broadly: they are writes of that key);
   * `stage`: they honour `options.publish` (A12 read narrowly). The connector must be safe under both.
   */
  legacyJobs: 'publish' | 'stage';
}

/** A record change made by a person in the portal (a "foreign" editor). */
export interface PortalEdit {
  /** Records to add or overwrite. */
  upsert?: DatasetRecord[];
  /** record_ids to delete. */
  delete?: string[];
  /** The whole new content (instead of upsert/delete). */
  records?: DatasetRecord[];
}

/** The emulated service: datasets, keys, jobs, limits and test controls. */
export class Emulator {
  readonly clock: EmulatorClock;
  readonly keys = new KeyRegistry();
  readonly datasets = new Map<string, DatasetState>();
  readonly jobs = new JobStore();
  readonly limiter = new SlidingWindowLimiter(120);
  readonly idempotency = new IdempotencyStore();
  readonly faults = new FaultInjector();
  /** Every API request in arrival order (admin routes excluded). */
  readonly requests: RequestLogEntry[] = [];
  readonly counters: EmulatorCounters = { jobsCreated: 0, recordWrites: 0, publishes: 0, discards: 0, replays: 0 };

  constructor(opts: { clock?: EmulatorClock } = {}) {
    this.clock = opts.clock ?? new EmulatorClock();
  }

  /** Current settings. */
  get settings(): EmulatorSettings {
    return { jobDurationMs: this.jobs.durationMs, rateLimitPerMinute: this.limiter.limitPerWindow, rowErrors: this.#rowErrors, legacyJobs: this.#legacyJobs };
  }
  #rowErrors: 'job' | 'sync' = 'job';
  #legacyJobs: 'publish' | 'stage' = 'publish';

  /** Change settings (unnamed ones keep their value). */
  configure(settings: Partial<EmulatorSettings>): EmulatorSettings {
    if (settings.jobDurationMs !== undefined) this.jobs.durationMs = Math.max(0, settings.jobDurationMs);
    if (settings.rateLimitPerMinute !== undefined) this.limiter.limitPerWindow = Math.max(1, settings.rateLimitPerMinute);
    if (settings.rowErrors !== undefined) this.#rowErrors = settings.rowErrors;
    if (settings.legacyJobs !== undefined) this.#legacyJobs = settings.legacyJobs;
    return this.settings;
  }

  /** Let time act: finish due jobs (expiry is checked lazily where drafts are used). */
  tick(): void {
    this.jobs.tick(this.clock.now(), (id) => this.datasets.get(id));
  }

  /** Rule 3: throw 429 JOB_IN_PROGRESS while a job of the dataset is unfinished. */
  requireNoJob(dataset: string): void {
    const job = this.jobs.inProgress(dataset);
    if (job) {
      const leftMs = job.createdAt + job.durationMs - this.clock.now();
      const retryAfterS = Math.max(1, Math.ceil(leftMs / 1000));
      throw httpError(429, 'JOB_IN_PROGRESS', `job ${job.id} is in progress`, { job_id: job.id, retry_after_s: retryAfterS }, {
        'retry-after': String(retryAfterS),
      });
    }
  }

  /** Create a dataset; with `records` they are published as version 1 (A22). */
  addDataset(input: { id: string; name?: string; apiEnabled?: boolean; records?: DatasetRecord[] }): DatasetState {
    if (this.datasets.has(input.id)) throw httpError(409, 'CONFLICT', `dataset ${input.id} exists`);
    const ds = new DatasetState(input.id, input.name ?? input.id, this.clock.now(), input.apiEnabled ?? true);
    this.datasets.set(ds.id, ds);
    if (input.records?.length) this.portalPublish(ds.id, { records: input.records });
    return ds;
  }

  /** Issue a key for a dataset (random when `key` is absent); returns the key text. */
  addKey(input: { dataset: string; key?: string; roles?: readonly Role[]; legacy?: boolean }): string {
    this.dataset(input.dataset);
    return this.keys.add(input).key;
  }

  /**
   * Reissue a key as the portal does: returns the new key; the old one keeps
   * working for `graceMs` of the emulator clock (at most 24 hours; 0: ends now),
   * then gets 401. The new key has the old one's dataset and roles unless `roles` is given.
   */
  reissueKey(input: { key: string; graceMs: number; newKey?: string; roles?: readonly Role[] }): { key: string; oldValidUntil: number | null } {
    const r = this.keys.reissue(input.key, { graceMs: input.graceMs, ...(input.newKey === undefined ? {} : { key: input.newKey }), ...(input.roles ? { roles: input.roles } : {}) }, this.clock.now());
    return { key: r.entry.key, oldValidUntil: r.oldValidUntil };
  }

  /** Revoke a key (its requests get 401). */
  revokeKey(key: string): void {
    if (!this.keys.revoke(key)) throw httpError(404, 'NOT_FOUND', 'no such key');
  }

  /** Turn a dataset's external API switch on or off. */
  setApiEnabled(dataset: string, enabled: boolean): void {
    this.dataset(dataset).apiEnabled = enabled;
  }

  /** A dataset by id, or 404. */
  dataset(id: string): DatasetState {
    const ds = this.datasets.get(id);
    if (!ds) throw httpError(404, 'DATASET_NOT_FOUND', `dataset ${id} does not exist`);
    return ds;
  }

  /** A person publishes a change in the portal: a new active version at once; returns its number. */
  portalPublish(dataset: string, edit: PortalEdit): number {
    const ds = this.dataset(dataset);
    this.tick();
    return ds.publishDirect(this.clock.now(), 'portal', (records) => applyPortalEdit(records, edit)).version;
  }

  /** A person stages a change in the portal: it goes into the pending draft (created if needed); returns its number. */
  portalDraft(dataset: string, edit: PortalEdit): number {
    const ds = this.dataset(dataset);
    this.tick();
    const now = this.clock.now();
    const draft = ds.pendingDraft(now) ?? ds.createDraft(now, 'portal');
    applyPortalEdit(draft.records as Map<string, DatasetRecord>, edit);
    return draft.version;
  }

  /** Records of the active version, or of the pending draft, in record_id order. */
  records(dataset: string, source: 'active' | 'draft' = 'active'): DatasetRecord[] {
    const ds = this.dataset(dataset);
    this.tick();
    if (source === 'active') return sortedRecords(ds.activeRecords);
    const draft = ds.pendingDraft(this.clock.now());
    return draft ? sortedRecords(draft.records as Map<string, DatasetRecord>) : [];
  }

  /** A summary of a dataset's state for tests and the admin route. */
  describe(dataset: string): {
    dataset_id: string;
    name: string;
    api_enabled: boolean;
    active_version: number;
    draft_version: number | null;
    record_count: number;
    versions: { version: number; status: VersionState['status']; base_version: number | null; author: string }[];
  } {
    const ds = this.dataset(dataset);
    this.tick();
    const now = this.clock.now();
    return {
      dataset_id: ds.id,
      name: ds.name,
      api_enabled: ds.apiEnabled,
      active_version: ds.activeVersion,
      draft_version: ds.draftVersion(now),
      record_count: ds.activeRecords.size,
      versions: [...ds.versions.values()].map((v) => ({ version: v.version, status: v.status, base_version: v.baseVersion, author: v.author })),
    };
  }

  /** A job as the API would show it now. */
  job(id: string): WireJob {
    this.tick();
    const job = this.jobs.get(id);
    if (!job) throw httpError(404, 'JOB_NOT_FOUND', `job ${id} does not exist`);
    return this.jobs.render(job, this.clock.now());
  }

  /** Forget the request log (counters stay). */
  clearRequests(): void {
    this.requests.length = 0;
  }
}

function applyPortalEdit(records: Map<string, DatasetRecord>, edit: PortalEdit): void {
  const check = (r: DatasetRecord): DatasetRecord => {
    const v = validateRecord(r);
    if (!v.ok) throw httpError(422, 'VALIDATION_FAILED', `record ${String(r.record_id)} is not valid`, { issues: v.issues });
    return v.record;
  };
  if (edit.records) {
    records.clear();
    for (const r of edit.records) records.set(r.record_id, check(r));
  }
  for (const r of edit.upsert ?? []) records.set(r.record_id, check(r));
  for (const id of edit.delete ?? []) records.delete(id);
}
