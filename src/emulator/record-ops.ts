import { recordPatchSchema, validateRecord, type DatasetRecord } from '../model/record.js';
import { httpError, validationFailed } from './http-error.js';
import type { RowError } from './types.js';

/** A single-record write, as POST, PATCH or DELETE of /records asks. */
export type RecordWrite =
  | { kind: 'create'; record: DatasetRecord }
  | { kind: 'patch'; recordId: string; patch: Partial<DatasetRecord> }
  | { kind: 'delete'; recordId: string };

/** What a write did: the record before and after (null for absent). */
export interface AppliedWrite {
  op: 'add' | 'change' | 'delete';
  before: DatasetRecord | null;
  after: DatasetRecord | null;
}

/** A6/A34: turn issues of one record into A3 row errors. */
export function issuesToRowErrors(
  row: number,
  recordId: string | null,
  issues: { field: string; message: string }[],
): RowError[] {
  return issues.map((i) => ({ row, record_id: recordId, field: i.field, message: i.message }));
}

/** A33: check a POST body (a bare record) and return the record with defaults. */
export function parseCreateBody(body: unknown): DatasetRecord {
  const result = validateRecord(body);
  if (result.ok) return result.record;
  const id = typeof (body as { record_id?: unknown })?.record_id === 'string' ? (body as { record_id: string }).record_id : null;
  throw validationFailed('the record is not valid', { errors: issuesToRowErrors(1, id, result.issues) });
}

/** A33: check a PATCH body; only the fields present are kept (each replaces the field whole). */
export function parsePatchBody(recordId: string, body: unknown): Partial<DatasetRecord> {
  const result = recordPatchSchema.safeParse(body);
  if (!result.success) {
    const issues = result.error.issues.map((i) => ({ field: i.path.length ? i.path.join('.') : '(record)', message: i.message }));
    throw validationFailed('the patch is not valid', { errors: issuesToRowErrors(1, recordId, issues) });
  }
  // zod fills defaults into absent optional fields; a PATCH must only touch what it names.
  const present = Object.keys(body as object);
  const out: Record<string, unknown> = {};
  for (const k of present) out[k] = (result.data as Record<string, unknown>)[k];
  return out as Partial<DatasetRecord>;
}

/** Apply one write to a record map in place (A9 errors: 422 on duplicate create, 404 on missing id). */
export function applyWrite(records: Map<string, DatasetRecord>, write: RecordWrite): AppliedWrite {
  if (write.kind === 'create') {
    const id = write.record.record_id;
    if (records.has(id)) {
      throw validationFailed(`record ${id} already exists`, {
        errors: [{ row: 1, record_id: id, field: 'record_id', message: 'a record with this record_id already exists' }],
      });
    }
    records.set(id, write.record);
    return { op: 'add', before: null, after: write.record };
  }
  const before = records.get(write.recordId);
  if (!before) throw httpError(404, 'RECORD_NOT_FOUND', `record ${write.recordId} does not exist`, { record_id: write.recordId });
  if (write.kind === 'delete') {
    records.delete(write.recordId);
    return { op: 'delete', before, after: null };
  }
  const merged = validateRecord({ ...before, ...write.patch });
  if (!merged.ok) {
    throw validationFailed('the patched record is not valid', { errors: issuesToRowErrors(1, write.recordId, merged.issues) });
  }
  records.set(write.recordId, merged.record);
  return { op: 'change', before, after: merged.record };
}
