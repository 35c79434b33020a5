import { z } from 'zod';
import { attributesSchema, type DatasetRecord } from '../model/record.js';

/**
 * Every response shape of the Business Dataset Editing API, one schema per
 * response, each citing the wire assumption it encodes (A1–A35, explained
 * in docs/contract.md). Correcting an assumption against the real service is
 * a change to this file alone.
 *
 * Reading is tolerant: objects are not strict (unknown fields are dropped),
 * and the alternative spellings the assumptions list are accepted. Values of
 * enumerations are not guessed at: an unknown status is a BAD_RESPONSE.
 */

const int = z.number().int();

/** A1 (+A2, A3): error body, nested `{error: {...}}` or flat `{code, message}`; normalised to the flat form. */
export const errorBodySchema = z
  .union([
    z.object({
      error: z.object({
        code: z.string(),
        message: z.string().optional(),
        details: z.record(z.string(), z.unknown()).nullish(),
      }),
    }),
    z.object({
      code: z.string(),
      message: z.string().optional(),
      details: z.record(z.string(), z.unknown()).nullish(),
    }),
  ])
  .transform((b) => {
    const e = 'error' in b ? b.error : b;
    return { code: e.code, message: e.message ?? '', details: e.details ?? {} };
  });
export type ErrorBody = z.output<typeof errorBodySchema>;

/** A3: one row of a validation failure; `row` is 1-based over the records array or the file's data lines. */
export const rowErrorSchema = z.object({
  row: int.nullish(),
  record_id: z.string().nullish(),
  field: z.string().nullish(),
  message: z.string().default(''),
  code: z.string().nullish(),
});
export type RowError = z.output<typeof rowErrorSchema>;

/** A3: the row errors inside an error's `details` (absent → none). */
export const rowErrorsInDetailsSchema = z.object({ errors: z.array(rowErrorSchema).default([]) });

/** A2: the `details` of a 412 answer. */
export const preconditionDetailsSchema = z.object({ current_etag: z.string().nullish() });

const attributeValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);

/**
 * A6, read side: the six fields by type only. Server-side limits are the
 * server's business when reading (a record made in the portal is still a record).
 */
export const recordReadSchema: z.ZodType<DatasetRecord> = z.object({
  record_id: z.string(),
  display_name: z.string(),
  api_value: z.string(),
  aliases: z.array(z.string()).default([]),
  attributes: attributesSchema(attributeValue).default({}),
  active: z.boolean().default(true),
});

/** A7: `GET /records` page; `items` accepted for `records`, `next` for `next_cursor`. */
export const recordPageSchema = z
  .object({
    records: z.array(recordReadSchema).optional(),
    items: z.array(recordReadSchema).optional(),
    next_cursor: z.string().nullish(),
    next: z.string().nullish(),
  })
  .refine((p) => p.records !== undefined || p.items !== undefined, { message: 'neither records nor items' })
  .transform((p) => ({
    records: p.records ?? p.items ?? [],
    nextCursor: p.next_cursor ?? p.next ?? null,
  }));
export type RecordPage = z.output<typeof recordPageSchema>;

/** A31: `GET /records/{id}` answers `{record}`; a bare Record is accepted too. */
export const singleRecordSchema = z.union([
  z.object({ record: recordReadSchema }).transform((b) => b.record),
  recordReadSchema,
]);

/** A9 (+Rule 1, A12): the write result of POST/PATCH/DELETE `/records`. */
export const writeResultSchema = z.object({
  record: recordReadSchema.nullable().default(null),
  version: int,
  status: z.enum(['published', 'draft']),
  staged: z.boolean().default(false),
  publish_denied: z.boolean().default(false),
});
export type WriteResult = z.output<typeof writeResultSchema>;

/** A15: terminal and non-terminal job statuses. */
export const jobStatusSchema = z.enum(['QUEUED', 'RUNNING', 'PUBLISHED', 'STAGED', 'FAILED']);
export type JobStatus = z.output<typeof jobStatusSchema>;
/** Spec: the caller polls until one of these three. */
export const TERMINAL_JOB_STATUSES: readonly JobStatus[] = ['PUBLISHED', 'STAGED', 'FAILED'];

/** A15/A19: added/changed/deleted counts (missing counts read as zero). */
export const countsSchema = z.object({
  added: int.default(0),
  changed: int.default(0),
  deleted: int.default(0),
});
export type ChangeCounts = z.output<typeof countsSchema>;
const zeroCounts = (): ChangeCounts => ({ added: 0, changed: 0, deleted: 0 });

/** A15 (+A5 `reason`): a sync job. */
export const jobSchema = z.object({
  job_id: z.string(),
  status: jobStatusSchema,
  version: int.nullable().default(null),
  counts: countsSchema.default(zeroCounts),
  errors: z.array(rowErrorSchema).default([]),
  reason: z.string().nullable().default(null),
  created_at: z.string().nullish(),
  updated_at: z.string().nullish(),
});
export type Job = z.output<typeof jobSchema>;

/** A15 (202 of replace/upload) and A32 (`GET /sync-jobs/{id}`): `{job}`, or a bare Job (A32). */
export const jobEnvelopeSchema = z.union([z.object({ job: jobSchema }).transform((b) => b.job), jobSchema]);

/** A18: version statuses. */
export const versionStatusSchema = z.enum(['active', 'draft', 'superseded', 'discarded', 'expired']);
export type VersionStatus = z.output<typeof versionStatusSchema>;

/** A18: one entry of `GET /versions`. */
export const versionSummarySchema = z.object({
  version: int,
  status: versionStatusSchema,
  base_version: int.nullable().default(null),
  created_at: z.string().nullish(),
  counts: countsSchema.default(zeroCounts),
});
export type VersionSummary = z.output<typeof versionSummarySchema>;

/** A18 (+A22): `GET /versions`, newest first. */
export const versionListSchema = z.object({
  active_version: int,
  versions: z.array(versionSummarySchema),
});
export type VersionList = z.output<typeof versionListSchema>;

/** A19: one change in a version's sample. */
export const sampleEntrySchema = z.object({
  op: z.enum(['add', 'change', 'delete']),
  record: recordReadSchema,
});

/** A19: `GET /versions/{v}`. */
export const versionDetailSchema = z.object({
  version: int,
  status: versionStatusSchema,
  base_version: int.nullable().default(null),
  counts: countsSchema.default(zeroCounts),
  sample: z.array(sampleEntrySchema).default([]),
});
export type VersionDetail = z.output<typeof versionDetailSchema>;

/** A20: `POST /versions/{v}/publish` answer. */
export const publishResultSchema = z.object({
  version: int,
  status: versionStatusSchema,
});
export type PublishResult = z.output<typeof publishResultSchema>;

/** A25: `GET {base}` dataset read. */
export const datasetSchema = z.object({
  dataset_id: z.string(),
  name: z.string().nullish(),
  record_count: int,
  active_version: int,
  draft_version: int.nullable().default(null),
});
export type Dataset = z.output<typeof datasetSchema>;

/** A13: `options` of replace and upload; only the keys the contract names (A34). */
export interface ReplaceOptions {
  publish?: boolean;
  allow_mass_delete?: boolean;
  allow_empty?: boolean;
}

/** A20: `options` of publish. */
export interface PublishOptions {
  allow_mass_delete?: boolean;
  allow_empty?: boolean;
}

/** A8/A9: the active version number inside an ETag `"v12"` (weak `W/` prefix tolerated); null if not of that form. */
export function etagVersion(etag: string | null | undefined): number | null {
  if (!etag) return null;
  const m = /^(?:W\/)?"?v(\d+)"?$/.exec(etag.trim());
  return m ? Number(m[1]) : null;
}

/** The ETag header value for an active version number (spec: `"v<number>"`). */
export function etagFor(version: number): string {
  return `"v${version}"`;
}
