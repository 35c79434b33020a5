import { sameJson } from './canonical.js';
import { RECORD_FIELDS, type DatasetRecord, type RecordField, type RecordPatch } from './record.js';

/** Top-level fields (other than record_id) whose values differ; aliases and attributes compare whole (A33). */
export function changedFields(before: DatasetRecord, after: DatasetRecord): RecordField[] {
  const out: RecordField[] = [];
  for (const f of RECORD_FIELDS) {
    if (f === 'record_id') continue;
    if (!sameJson(before[f], after[f])) out.push(f);
  }
  return out;
}

/** The PATCH body that turns a record into `after`: only the given fields, each whole (A33). */
export function patchOf(after: DatasetRecord, fields: readonly RecordField[]): RecordPatch {
  const patch: Record<string, unknown> = {};
  for (const f of fields) if (f !== 'record_id') patch[f] = after[f];
  return patch as RecordPatch;
}

/** Parse a stored field list. */
export function parseFields(text: string | null): RecordField[] {
  if (!text) return [];
  const list = JSON.parse(text) as unknown;
  return Array.isArray(list) ? (list.filter((f) => (RECORD_FIELDS as readonly unknown[]).includes(f)) as RecordField[]) : [];
}

/** The foreign-edited fields whose server value the new record keeps, as stored text (null when none). */
export function keptForeignFields(oldJson: string, fieldsText: string | null, rec: DatasetRecord): string | null {
  const fields = parseFields(fieldsText);
  if (fields.length === 0) return null;
  const changed = new Set<RecordField>(changedFields(JSON.parse(oldJson) as DatasetRecord, rec));
  const kept = fields.filter((f) => !changed.has(f));
  return kept.length ? JSON.stringify(kept) : null;
}
