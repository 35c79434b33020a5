import { z } from 'zod';
import { validateRecord, type DatasetRecord } from '../model/record.js';
import { validationFailed, zodIssues } from './http-error.js';
import { issuesToRowErrors } from './record-ops.js';
import type { ReplaceOptions, RowError } from './types.js';

/** A13: options of replace and upload; A34: unknown keys refused. */
export const replaceOptionsSchema = z
  .object({
    publish: z.boolean().default(true),
    allow_mass_delete: z.boolean().default(false),
    allow_empty: z.boolean().default(false),
  })
  .strict();

/** A13: the PUT /records body. */
const replaceBodySchema = z.object({ records: z.array(z.unknown()), options: z.unknown().optional() }).strict();

/** Most row errors kept on a job or a 422 answer. */
export const MAX_ROW_ERRORS = 1000;

/** Parse options (an object, or JSON text for uploads). */
export function parseReplaceOptions(raw: unknown): ReplaceOptions {
  const parsed = replaceOptionsSchema.safeParse(raw ?? {});
  if (!parsed.success) throw validationFailed('options are not valid', { issues: zodIssues(parsed.error) });
  return parsed.data;
}

/** A13: check the shape of a replace body; records are checked one by one later. */
export function parseReplaceBody(body: unknown): { candidates: unknown[]; options: ReplaceOptions } {
  const parsed = replaceBodySchema.safeParse(body);
  if (!parsed.success) throw validationFailed('the replace body is not valid', { issues: zodIssues(parsed.error) });
  return { candidates: parsed.data.records, options: parseReplaceOptions(parsed.data.options) };
}

/** A6 + A3: validate candidate records (row = 1-based position), unique record_id. */
export function validateCandidates(
  candidates: readonly unknown[],
  rowNumber: (index: number) => number = (i) => i + 1,
  preErrors: RowError[] = [],
): { records: Map<string, DatasetRecord>; errors: RowError[] } {
  const records = new Map<string, DatasetRecord>();
  const errors: RowError[] = [...preErrors];
  const badRows = new Set(preErrors.map((e) => e.row));
  candidates.forEach((candidate, i) => {
    const row = rowNumber(i);
    if (badRows.has(row)) return;
    const result = validateRecord(candidate);
    const rawId = (candidate as { record_id?: unknown } | null)?.record_id;
    const id = typeof rawId === 'string' ? rawId : null;
    if (!result.ok) {
      errors.push(...issuesToRowErrors(row, id, result.issues));
      return;
    }
    if (records.has(result.record.record_id)) {
      errors.push({ row, record_id: id, field: 'record_id', message: 'record_id appears more than once' });
      return;
    }
    records.set(result.record.record_id, result.record);
  });
  errors.sort((a, b) => a.row - b.row);
  return { records, errors: errors.slice(0, MAX_ROW_ERRORS) };
}
