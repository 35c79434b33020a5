import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { ApiError } from '../../api/errors.js';
import type { Job } from '../../api/wire.js';
import { ConnectorError, hasCode } from '../../errors.js';
import { checkpoint, InterruptedError } from './interrupt.js';
import { replaceBody, type StreamedBody } from '../../api/bodies.js';
import { TallyAhead } from '../../snapshot/tallies.js';
import { confirmedParts } from '../core/diff.js';
import type { RecordText } from '../core/changeset.js';
import type { ExecContext } from './context.js';
import { changesetDirOf, planLines } from './plan-files.js';
import type { PlanRun } from './plan-run.js';
import { replaceRecords } from '../core/ownership.js';
import type { RunJournal } from './run-journal.js';
import type { JournalEntry } from '../../snapshot/journal.js';
import type { StageResult } from './stage-result.js';
import { bodyRowLines, withRowLines } from './server-rows.js';
import { learnFromJob, sendBinding } from './key-knowledge.js';

/** A job ended FAILED (A15) or STAGED with a reason when a draft was not asked for (A5). */
export class JobEndedError extends ConnectorError {
  constructor(readonly job: Job) {
    super(
      job.status === 'FAILED' ? 'JOB_FAILED' : 'JOB_STAGED',
      `Job ${job.job_id} ended ${job.status}${job.reason ? ` (${job.reason})` : ''}${job.errors.length ? ` with ${job.errors.length} row errors` : ''}.`,
      { action: job.status === 'FAILED' ? 'reject' : 'hold', context: { job_id: job.job_id, reason: job.reason } },
    );
  }
}

/** A13 options of a replace or upload: always a draft; an approved held change also carries the flags it needs (A5: a legacy key publishes it at once). */
export function stageOptions(run: PlanRun): { publish: false; allow_mass_delete?: true; allow_empty?: true } {
  const f = run.approved ? run.plan.requiredFlags : undefined;
  return { publish: false, ...(f?.allow_mass_delete ? { allow_mass_delete: true } : {}), ...(f?.allow_empty ? { allow_empty: true } : {}) } as const;
}

/**
 * The whole record set of the replace (source records plus not-owned records
 * carried over, issue 7) as a body streamed from the plan's changeset and the
 * snapshot, measured: its hash is the journal's (A16).
 */
export function replaceBodyOf(ctx: ExecContext, run: PlanRun): ReturnType<typeof replaceBody> {
  // The measured bytes kept in the plan's changeset folder (removed with the plan) for the sends of this process.
  return replaceBody(() => replaceRecords(run.changeset, ctx.store.reader()), stageOptions(run), join(changesetDirOf(ctx.planDir, run.plan.id), REPLACE_BODY_COPY));
}

/** The file of a replace body's measured bytes in its plan's changeset folder. */
const REPLACE_BODY_COPY = 'replace-body.json';

/**
 * Send one replace (PUT /records, `options.publish=false`) and wait for its
 * job. Resumes from the journal: a known job is polled; an unanswered replace
 * is re-sent with the same Idempotency-Key and the same body (A16), so the
 * server answers with the same job instead of starting a second one.
 */
export async function applyReplace(ctx: ExecContext, run: PlanRun, rj: RunJournal): Promise<StageResult> {
  // A3: a row error without a record_id is found by its index into the body sent (the same again: the snapshot is unchanged until publish).
  const rowLines = bodyRowLines(
    (rows) => idsAt(replaceRecords(run.changeset, ctx.store.reader()), rows),
    (ids) => planLines(ctx.planDir, run.plan.id, run.legacy, ids),
  );
  try {
    return await sendReplace(ctx, run, rj);
  } catch (err) {
    if (err instanceof JobEndedError || (err instanceof ApiError && err.rowErrors.length)) withRowLines(err, rowLines);
    throw err;
  }
}

/** The record ids at these 1-based positions of a body. */
function idsAt(records: Iterable<RecordText>, rows: ReadonlySet<number>): Map<number, string> {
  const out = new Map<number, string>();
  if (rows.size === 0) return out;
  let i = 0;
  for (const r of records) {
    if (rows.has(++i)) out.set(i, r.record_id);
    if (out.size === rows.size) break;
  }
  return out;
}

async function sendReplace(ctx: ExecContext, run: PlanRun, rj: RunJournal): Promise<StageResult> {
  const plan = run.plan;
  const known = journaledJob(rj);
  if (known) return jobStage(known);
  let step = rj.get('replace');
  if (!step?.jobId) {
    // The snapshot is unchanged until publish, so the rebuilt body is the journaled one.
    const body = replaceBodyOf(ctx, run);
    try {
      step = await sendBody(ctx, run, rj, step, body);
    } finally {
      body.discard();
    }
  }
  return jobStage(await awaitJob(ctx, run, rj, step.jobId!));
}

/** Journal the replace's intent (its body measured) and send it; the step with the job the server accepted. */
async function sendBody(ctx: ExecContext, run: PlanRun, rj: RunJournal, journaled: JournalEntry | undefined, body: ReturnType<typeof replaceBody>): Promise<JournalEntry> {
  const plan = run.plan;
  let step = journaled;
  if (step && step.bodyHash !== body.hash) {
    throw new ConnectorError('REPLAY_MISMATCH', 'The replace body cannot be rebuilt as journaled.', {
      action: 'retry',
      context: { dataset: ctx.dataset, planId: plan.id },
    });
  }
  checkpoint(ctx);
  const binding = sendBinding(ctx, run); // issue 11: before the intent, so a replace that may not go out leaves none
  step ??= rj.intent('replace', {
    kind: 'replace',
    idempotencyKey: randomUUID(),
    bodyHash: body.hash,
    intent: { records: body.records, baseEtag: plan.baseEtag },
  });
  let res;
  try {
    res = await ctx.client.replaceRecordsStreamed(countingAhead(ctx, run, body.body), { idempotencyKey: step.idempotencyKey!, ...binding, ...(plan.baseEtag ? { ifMatch: plan.baseEtag } : {}) });
  } catch (err) {
    // A 4xx answer applied nothing: no draft can be this replace's (abandonPlan must not claim one).
    if (refusedForSure(err)) rj.failed('replace', { code: err.code, status: err.status });
    throw err;
  }
  return jobAccepted(ctx, rj, 'replace', res);
}

/**
 * Issue 18: a replace into a dataset without records (a first sync) has its tallies counted once its body is sent,
 * while the server reads and checks it (seconds for 200,000 records), not after the publish answer. A body sent
 * again (a retry) does not count again; a dataset with records, or without kept tallies, is left to the confirm.
 */
function countingAhead(ctx: ExecContext, run: PlanRun, body: StreamedBody): StreamedBody {
  if (ctx.store.tallies()?.records !== 0) return body;
  const ahead = new TallyAhead(run.plan.id);
  ctx.tallyAhead = ahead;
  return {
    contentType: body.contentType,
    length: body.length,
    async *open() {
      yield* body.open();
      void ahead.count(confirmedParts(run.changeset).upsertTexts);
    },
  };
}

/** An answer that says the request was not applied (4xx). */
export function refusedForSure(err: unknown): err is ApiError {
  return err instanceof ApiError && err.status !== null && err.status >= 400 && err.status < 500;
}

/** The job a plan's journal says ended, if any (resume: poll nothing). */
export function journaledJob(rj: RunJournal): Job | null {
  const jobStep = rj.get('job');
  return jobStep?.status === 'done' ? (jobStep.result as Job) : null;
}

/** Record the job id a replace or upload was answered with, and the key that sent it (a fingerprint), in the step that sent it. */
export function jobAccepted(ctx: ExecContext, rj: RunJournal, name: string, res: { value: Job; replayed: boolean }): JournalEntry {
  ctx.db.transaction(() => {
    rj.update(name, { jobId: res.value.job_id });
    rj.done(name, { job_id: res.value.job_id, replayed: res.replayed, key_id: ctx.client.keyId });
  });
  rj.committed(name);
  return rj.get(name)!;
}

/** Poll the job to its end (A15), journal it and its timing. */
export async function awaitJob(ctx: ExecContext, run: PlanRun, rj: RunJournal, jobId: string): Promise<Job> {
  checkpoint(ctx);
  if (!rj.get('job')) rj.intent('job', { kind: 'job', jobId });
  const started = ctx.clock.now();
  let job: Job;
  try {
    // Polling is reads only: the signal may end it between polls; the job id is journaled for resume.
    job = await ctx.client.waitForJob(jobId, { pollMs: ctx.policy.replace.job_poll_ms, ...(ctx.signal ? { signal: ctx.signal } : {}) });
  } catch (err) {
    if (ctx.signal?.aborted && hasCode(err, 'ABORTED')) throw new InterruptedError(ctx.dataset, err);
    throw err;
  }
  ctx.db.transaction(() => {
    rj.update('job', { draftVersion: job.version });
    rj.done('job', job);
    if (job.status !== 'FAILED') ctx.store.recordJobTiming(ctx.clock.now() - started, run.plan.resultCount);
    // A12: what the key that sent the job did with options.publish false. A PUBLISHED job's snapshot
    // advances in the ledger's published, like every published plan's (a crash before it resumes from this step).
    learnFromJob(ctx, senderOf(rj) ?? ctx.client.keyId, job);
  });
  rj.committed('job');
  return job;
}

/** The key (fingerprint) that sent the plan's replace or upload, as journaled when its job was accepted. */
function senderOf(rj: RunJournal): string | null {
  const r = (rj.get('replace') ?? rj.get('import'))?.result as { key_id?: unknown } | null | undefined;
  return typeof r?.key_id === 'string' ? r.key_id : null;
}

/** Where a job that ended left the change (A15); FAILED, or no version, throws JobEndedError. */
export function jobStage(job: Job): StageResult {
  if (job.status === 'FAILED') throw new JobEndedError(job);
  if (job.version === null) throw new JobEndedError(job);
  if (job.status === 'PUBLISHED') return { kind: 'published', version: job.version, legacy: true };
  return { kind: 'staged', version: job.version, publishDenied: false };
}
