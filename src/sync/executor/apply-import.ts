import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { ApiError } from '../../api/errors.js';
import { ConnectorError } from '../../errors.js';
import { canonicalHash } from '../../model/canonical.js';
import { NEVER_FOLLOW, hashFile } from '../../sources/open-file.js';
import { awaitJob, JobEndedError, jobAccepted, jobStage, journaledJob, refusedForSure, stageOptions } from './apply-replace.js';
import type { ExecContext } from './context.js';
import { planLines } from './plan-files.js';
import type { PlanUpload } from '../core/plan.js';
import type { PlanRun } from './plan-run.js';
import type { RunJournal } from './run-journal.js';
import type { StageResult } from './stage-result.js';
import { serverRowErrors, uploadRowLines } from './server-rows.js';
import { checkpoint } from './interrupt.js';
import { sendBinding } from './key-knowledge.js';

/**
 * The upload path (POST /imports, A14): the export file itself goes to the
 * server with a mapping, instead of PUT /records with the records. Chosen only
 * when the server maps the file exactly as the connector did (importable.ts);
 * anything that says otherwise (the upload refused, its job FAILED, a draft
 * that differs from the plan) ends in IMPORT_NOT_EQUIVALENT, and the sync
 * plans again with PUT /records.
 */

/** The server did not make of the file what the connector made of it: plan again without uploading. */
export class ImportNotEquivalentError extends ConnectorError {
  constructor(message: string, context: Record<string, unknown> = {}, cause?: unknown) {
    super('IMPORT_NOT_EQUIVALENT', message, { action: 'retry', context, cause });
  }
}

/** A14/A16: everything the upload's Idempotency-Key stands for. */
function uploadHash(u: PlanUpload, options: object): string {
  return canonicalHash({ file: u.sha256, mapping: u.mapping, encoding: u.encoding, options });
}

/** Upload refusals that mean "the server reads this file differently", not "the dataset cannot take it now". */
function refusedUpload(err: unknown): err is ApiError {
  return err instanceof ApiError && err.status !== null && [400, 413, 415, 422].includes(err.status) && err.code !== 'IDEMPOTENCY_KEY_REUSED';
}

/**
 * Upload the file (`options.publish=false`) and wait for its job. Resumes like
 * a replace: a known job is polled; an unanswered upload is sent again with
 * the same Idempotency-Key and the same bytes (A16), giving the same job.
 */
export async function applyImport(ctx: ExecContext, run: PlanRun, rj: RunJournal): Promise<StageResult> {
  const plan = run.plan;
  const u = plan.upload;
  if (!u) throw new ConnectorError('REPLAY_MISMATCH', 'The import plan has no file to upload.', { action: 'retry', context: { planId: plan.id } });
  const known = journaledJob(rj);
  if (known) return importStage(ctx, run, known);
  let step = rj.get('import');
  if (!step?.jobId) {
    const options = stageOptions(run);
    const hash = uploadHash(u, options);
    // A copy this process made was hashed as it was copied (ledger.begin); one left by an earlier process (a resume) is checked before it is sent.
    const copyOk = run.uploadChecked === true || (await hashFile(u.path, NEVER_FOLLOW).catch(() => null)) === u.sha256;
    if (!copyOk || (step && step.bodyHash !== hash)) {
      throw new ConnectorError('REPLAY_MISMATCH', 'The upload cannot be sent again as journaled (its copy is gone or changed).', {
        action: 'retry',
        context: { dataset: ctx.dataset, planId: plan.id },
      });
    }
    checkpoint(ctx);
    const binding = sendBinding(ctx, run); // issue 11: before the intent, so an upload that may not go out leaves none
    step ??= rj.intent('import', { kind: 'import', idempotencyKey: randomUUID(), bodyHash: hash, intent: { file: u.filename, baseEtag: plan.baseEtag } });
    let res;
    try {
      res = await ctx.client.importFile(
        { path: u.path, filename: u.filename, contentType: u.contentType },
        { mapping: u.mapping, encoding: u.encoding, options },
        { idempotencyKey: step.idempotencyKey!, ...binding, ...(plan.baseEtag ? { ifMatch: plan.baseEtag } : {}) },
      );
    } catch (err) {
      if (!refusedUpload(err)) {
        if (refusedForSure(err)) rj.failed('import', { code: err.code, status: err.status });
        throw err;
      }
      rj.failed('import', { code: err.code, status: err.status });
      throw new ImportNotEquivalentError(`The server refused the upload (${err.code}): sending the records instead.`, { code: err.code, rows: uploadRows(ctx, run, err.rowErrors) }, err);
    }
    step = jobAccepted(ctx, rj, 'import', res);
    // The job id is journaled: a resume polls it and never sends the file again.
    await rm(u.path, { force: true });
  }
  return importStage(ctx, run, await awaitJob(ctx, run, rj, step.jobId!));
}

function importStage(ctx: ExecContext, run: PlanRun, job: Parameters<typeof jobStage>[0]): StageResult {
  try {
    return jobStage(job);
  } catch (err) {
    // The records the connector made are valid (A6), so row errors here are the server reading the file otherwise.
    if (err instanceof JobEndedError && job.status === 'FAILED') {
      throw new ImportNotEquivalentError(
        `The upload's job failed (${job.errors.length} row errors): sending the records instead.`,
        { job_id: job.job_id, rows: uploadRows(ctx, run, job.errors) },
        err,
      );
    }
    throw err;
  }
}

/** A3: the first row errors of an upload at their file lines (data lines counted after the header), for the log. */
function uploadRows(ctx: ExecContext, run: PlanRun, errors: ReadonlyArray<{ row?: number | null; record_id?: string | null; field?: string | null; message: string }>) {
  const plan = run.plan;
  const lines = (ids: Iterable<string>) => planLines(ctx.planDir, plan.id, run.legacy, ids);
  return serverRowErrors(plan.file ?? '', lines, errors.slice(0, 10), uploadRowLines(plan.headerLine ?? 1)).map((r) => ({
    line: r.line,
    column: r.column,
    reason: r.reason,
  }));
}
