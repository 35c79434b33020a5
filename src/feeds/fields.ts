import type { AttributeValue, DatasetRecord } from '../model/record.js';

/** One record as the merge streams it: id, file line (0: not from the file being read) and canonical JSON. */
export interface FeedEntry {
  record_id: string;
  line: number;
  json: string;
  /** JSON.parse of `json`, key for key (parsesBackAs), when at hand: read, never changed. */
  record?: DatasetRecord;
}

/** The value of a mapped field (`attributes.<key>` or a top-level field) of a record; undefined when absent. */
export function fieldValue(r: DatasetRecord, field: string): unknown {
  if (field.startsWith('attributes.')) return r.attributes[field.slice(11)];
  return (r as unknown as Record<string, unknown>)[field];
}

/**
 * `r` with `field` set to `value` (a new record; attributes copied): A33,
 * PATCH replaces attributes whole, so a merged record always carries every
 * attribute, the other feeds' included.
 */
export function withField(r: DatasetRecord, field: string, value: unknown): DatasetRecord {
  if (field.startsWith('attributes.')) return { ...r, attributes: { ...r.attributes, [field.slice(11)]: value as AttributeValue } };
  return { ...r, [field]: value } as DatasetRecord;
}
