import type { DatasetRecord } from '../model/record.js';
import type { ChangeCounts, SampleItem } from './types.js';

/** A19: how many items a version detail samples. */
export const SAMPLE_SIZE = 20;

/** Counts of a change between two record sets, plus the first changes in record_id order. */
export interface ChangeSummary {
  counts: ChangeCounts;
  sample: SampleItem[];
}

export const EMPTY_SUMMARY: ChangeSummary = { counts: { added: 0, changed: 0, deleted: 0 }, sample: [] };

/** True when two records carry the same content. */
export function recordsEqual(a: DatasetRecord, b: DatasetRecord): boolean {
  if (
    a.record_id !== b.record_id ||
    a.display_name !== b.display_name ||
    a.api_value !== b.api_value ||
    a.active !== b.active ||
    a.aliases.length !== b.aliases.length
  ) {
    return false;
  }
  for (let i = 0; i < a.aliases.length; i++) if (a.aliases[i] !== b.aliases[i]) return false;
  const ka = Object.keys(a.attributes);
  if (ka.length !== Object.keys(b.attributes).length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b.attributes, k) || a.attributes[k] !== b.attributes[k]) return false;
  }
  return true;
}

/** Byte order of record ids (A7); ids are ASCII by A6, so code-unit order is byte order. */
export function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** A19: the change from `base` to `target`. */
export function diffRecordMaps(
  base: ReadonlyMap<string, DatasetRecord>,
  target: ReadonlyMap<string, DatasetRecord>,
): ChangeSummary {
  const counts: ChangeCounts = { added: 0, changed: 0, deleted: 0 };
  const items: SampleItem[] = [];
  for (const [id, rec] of target) {
    const before = base.get(id);
    if (!before) {
      counts.added++;
      items.push({ op: 'add', record: rec });
    } else if (!recordsEqual(before, rec)) {
      counts.changed++;
      items.push({ op: 'change', record: rec });
    }
  }
  for (const [id, rec] of base) {
    if (!target.has(id)) {
      counts.deleted++;
      items.push({ op: 'delete', record: rec });
    }
  }
  items.sort((x, y) => compareIds(x.record.record_id, y.record.record_id));
  return { counts, sample: items.slice(0, SAMPLE_SIZE) };
}

/** Records of a map in record_id order. */
export function sortedRecords(map: ReadonlyMap<string, DatasetRecord>): DatasetRecord[] {
  return [...map.values()].sort((a, b) => compareIds(a.record_id, b.record_id));
}
