import { randomBytes } from 'node:crypto';
import type { DatasetRecord } from '../model/record.js';
import { guardFor, type DatasetState } from './dataset-state.js';
import type { ChangeCounts, JobStatus, ReplaceOptions, RowError, WireJob } from './types.js';

/** A replace or upload job, from acceptance to its terminal state (A15, A17). */
export interface JobState {
  id: string;
  dataset: string;
  kind: 'replace' | 'import';
  createdAt: number;
  durationMs: number;
  /** The validated record set the job will make into a draft (null when rows failed). */
  records: Map<string, DatasetRecord> | null;
  rowErrors: RowError[];
  options: ReplaceOptions;
  /** Rule 1: a key without the publish role only stages. */
  mayPublish: boolean;
  /** A12: a legacy key publishes even when publish is false. */
  legacy: boolean;
  outcome: JobOutcome | null;
}

interface JobOutcome {
  status: 'PUBLISHED' | 'STAGED' | 'FAILED';
  version: number | null;
  counts: ChangeCounts;
  errors: RowError[];
  reason: string | null;
  finishedAt: number;
}

const ZERO: ChangeCounts = { added: 0, changed: 0, deleted: 0 };

/** Jobs of every dataset; they move on the emulator clock when `tick()` runs (before every request). */
export class JobStore {
  readonly #jobs = new Map<string, JobState>();
  /** Default job duration for new jobs, in emulator-clock milliseconds (0: done on the next request). */
  durationMs = 0;
  /** How many jobs were ever accepted. */
  created = 0;

  /** Accept a job (status QUEUED). */
  create(input: Omit<JobState, 'id' | 'outcome' | 'durationMs'> & { durationMs?: number }): JobState {
    const job: JobState = {
      ...input,
      id: `job_${(++this.created).toString().padStart(4, '0')}_${randomBytes(4).toString('hex')}`,
      durationMs: input.durationMs ?? this.durationMs,
      outcome: null,
    };
    this.#jobs.set(job.id, job);
    return job;
  }

  /** A job by id. */
  get(id: string): JobState | undefined {
    return this.#jobs.get(id);
  }

  /** Every job, oldest first. */
  list(): JobState[] {
    return [...this.#jobs.values()];
  }

  /** Rule 3: the dataset's unfinished job, if any. */
  inProgress(dataset: string): JobState | null {
    for (const j of this.#jobs.values()) if (j.dataset === dataset && !j.outcome) return j;
    return null;
  }

  /** Finish every job whose time has come, applying it to its dataset. */
  tick(now: number, datasetOf: (id: string) => DatasetState | undefined): void {
    for (const job of this.#jobs.values()) {
      if (job.outcome || job.createdAt + job.durationMs > now) continue;
      const ds = datasetOf(job.dataset);
      job.outcome = ds
        ? finishJob(ds, job, now)
        : { status: 'FAILED', version: null, counts: ZERO, errors: [], reason: 'DATASET_NOT_FOUND', finishedAt: now };
      job.records = null;
    }
  }

  /** A15: the job as sent on the wire, at time `now`. */
  render(job: JobState, now: number): WireJob {
    const o = job.outcome;
    let status: JobStatus = 'QUEUED';
    let updatedAt = job.createdAt;
    if (o) {
      status = o.status;
      updatedAt = o.finishedAt;
    } else if (job.durationMs > 0 && now >= job.createdAt + job.durationMs / 4) {
      status = 'RUNNING';
      updatedAt = job.createdAt + Math.floor(job.durationMs / 4);
    }
    return {
      job_id: job.id,
      status,
      version: o?.version ?? null,
      counts: o ? { ...o.counts } : { ...ZERO },
      errors: o ? o.errors : [],
      reason: o?.reason ?? null,
      created_at: new Date(job.createdAt).toISOString(),
      updated_at: new Date(updatedAt).toISOString(),
    };
  }
}

/** A17 + A5: the job's records become a draft based on the active version; publish it unless held. */
function finishJob(ds: DatasetState, job: JobState, now: number): JobOutcome {
  const failed = (reason: string, errors: RowError[] = []): JobOutcome => ({
    status: 'FAILED',
    version: null,
    counts: ZERO,
    errors,
    reason,
    finishedAt: now,
  });
  if (job.rowErrors.length || !job.records) return failed('VALIDATION_FAILED', job.rowErrors);
  // A11: a draft that appeared meanwhile (staged writes, portal) blocks the job.
  if (ds.pendingDraft(now)) return failed('DRAFT_PENDING');
  const draft = ds.createDraft(now, 'api', job.records);
  const counts = { ...ds.summaryOf(draft).counts };
  const outcome = (status: 'PUBLISHED' | 'STAGED', reason: string | null): JobOutcome => ({
    status,
    version: draft.version,
    counts,
    errors: [],
    reason,
    finishedAt: now,
  });
  if (!job.legacy && !job.mayPublish) return outcome('STAGED', 'PUBLISH_DENIED');
  if (!job.legacy && !job.options.publish) return outcome('STAGED', 'PUBLISH_DISABLED');
  const guard = guardFor(ds.activeRecords, job.records, job.options);
  if (guard) return outcome('STAGED', guard);
  ds.activate(draft);
  return outcome('PUBLISHED', null);
}
