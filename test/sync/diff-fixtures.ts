import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DatasetRecord } from '../../src/model/record.js';

/** A valid record with overridable fields. */
export function rec(id: string, over: Partial<DatasetRecord> = {}): DatasetRecord {
  return { record_id: id, display_name: `Item ${id}`, api_value: id, aliases: [], attributes: {}, active: true, ...over };
}

/** `n` records r00000…, deterministic. */
export function recs(n: number, prefix = 'r'): DatasetRecord[] {
  return Array.from({ length: n }, (_, i) => rec(`${prefix}${String(i).padStart(5, '0')}`));
}

/** A temp dir removed by the returned cleanup. */
export function tempDir(): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'dc-state-'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}
