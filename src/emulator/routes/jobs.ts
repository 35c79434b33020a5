import { hasRole } from '../keys.js';
import { httpError, validationFailed } from '../http-error.js';
import { json, type ApiResponse } from '../http-types.js';
import type { FormField } from '../body.js';
import { parseReplaceBody, parseReplaceOptions, validateCandidates } from '../replace-input.js';
import { looksLikeXlsx, readCsv, readXlsx } from '../imports/table.js';
import { resolveColumns, rowsToCandidates } from '../imports/mapping.js';
import type { Route, RouteContext } from '../context.js';
import type { DatasetRecord } from '../../model/record.js';
import type { ReplaceOptions, RowError } from '../types.js';

/** A15/A17, Rule 3, A11: accept a replace or upload job (202), after the state checks. */
function acceptJob(
  ctx: RouteContext,
  kind: 'replace' | 'import',
  checked: { records: Map<string, DatasetRecord>; errors: RowError[] },
  options: ReplaceOptions,
): ApiResponse {
  const { emulator, ds, key, now } = ctx;
  // A setting lets tests see row errors as a synchronous 422 instead of a FAILED job (A3 allows both readings).
  if (checked.errors.length && emulator.settings.rowErrors === 'sync') {
    throw validationFailed(`${checked.errors.length} row(s) failed validation`, { errors: checked.errors });
  }
  emulator.requireNoJob(ds.id);
  const draft = ds.pendingDraft(now);
  if (draft) throw httpError(409, 'DRAFT_PENDING', `draft version ${draft.version} is pending`, { draft_version: draft.version });
  const job = emulator.jobs.create({
    dataset: ds.id,
    kind,
    createdAt: now,
    records: checked.errors.length ? null : checked.records,
    rowErrors: checked.errors,
    options,
    mayPublish: hasRole(key, 'publish'),
    // A12 read broadly (default) or narrowly (settings.legacyJobs): a legacy key's job publishes whatever options.publish says, or honours it.
    legacy: key.legacy && emulator.settings.legacyJobs === 'publish',
  });
  emulator.counters.jobsCreated++;
  return { ...json(202, { job: emulator.jobs.render(job, now) }, { etag: ds.etag }), jobId: job.id };
}

/** A13: PUT /records. */
function replaceRecords(ctx: RouteContext): ApiResponse {
  const { candidates, options } = parseReplaceBody(ctx.json);
  return acceptJob(ctx, 'replace', validateCandidates(candidates), options);
}

const IMPORT_FIELDS = ['file', 'mapping', 'sheet', 'encoding', 'options'];

/** A14: POST /imports (multipart: file, mapping, sheet, encoding, options). */
async function importFile(ctx: RouteContext): Promise<ApiResponse> {
  const fields = ctx.fields as FormField[];
  const byName = new Map<string, FormField>();
  for (const f of fields) {
    if (!IMPORT_FIELDS.includes(f.name)) throw validationFailed(`unknown form field ${f.name}`, { field: f.name });
    if (byName.has(f.name)) throw validationFailed(`form field ${f.name} appears more than once`, { field: f.name });
    byName.set(f.name, f);
  }
  const file = byName.get('file');
  if (!file) throw validationFailed('the upload needs a file field', { field: 'file' });
  const textOf = (name: string) => byName.get(name)?.bytes.toString('utf8');
  let options: ReplaceOptions;
  const optionsText = textOf('options');
  try {
    options = parseReplaceOptions(optionsText === undefined ? {} : JSON.parse(optionsText));
  } catch (cause) {
    if (cause instanceof SyntaxError) throw validationFailed('options must be JSON text', { field: 'options' });
    throw cause;
  }
  const xlsx = looksLikeXlsx(file.bytes);
  const table = xlsx ? await readXlsx(file.bytes, textOf('sheet')) : readCsv(file.bytes, textOf('encoding'));
  const columns = resolveColumns(table.header, textOf('mapping'));
  const { candidates, rowNumbers, errors } = rowsToCandidates(table, columns);
  const checked = validateCandidates(candidates, (i) => rowNumbers[i] as number, errors);
  return acceptJob(ctx, 'import', checked, options);
}

/** A32: GET /sync-jobs/{job_id}. */
function getJob(ctx: RouteContext): ApiResponse {
  const id = ctx.params.jobId as string;
  const job = ctx.emulator.jobs.get(id);
  if (!job || job.dataset !== ctx.ds.id) throw httpError(404, 'JOB_NOT_FOUND', `job ${id} does not exist`);
  return json(200, { job: ctx.emulator.jobs.render(job, ctx.now) }, { etag: ctx.ds.etag });
}

/** Routes of replace, upload and jobs. */
export const jobRoutes: Route[] = [
  { method: 'PUT', pattern: '/records', role: 'replace', write: true, body: 'json', query: [], handle: replaceRecords },
  { method: 'POST', pattern: '/imports', role: 'replace', write: true, body: 'multipart', query: [], handle: importFile },
  { method: 'GET', pattern: '/sync-jobs/:jobId', role: 'read', write: false, body: 'none', query: [], handle: getJob },
];
