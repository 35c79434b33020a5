import type { MappingConfig } from '../mapping/config.js';
import type { DatasetRecord } from '../model/record.js';
import type { SourceConfig } from '../sources/config.js';
import { readExportFile, writeRejectFile, type RowError } from '../sources/index.js';
import type { SourceError } from '../sources/errors.js';

/** The records of one export with where each came from. */
export interface SourceRead {
  file: string;
  fileHash: string;
  rows: number;
  records: DatasetRecord[];
  /** record_id → 1-based file line. */
  lines: Record<string, number>;
  rowErrors: RowError[];
  rejected: SourceError | null;
  /** Where the reject file was written, when there were row errors. */
  rejectFile: string | null;
}

/** Read and map an export (src/sources), and write its reject file beside it when rows were refused. */
export async function readSource(file: string, source: unknown, mapping: unknown): Promise<SourceRead> {
  const r = await readExportFile(file, source as SourceConfig, mapping as MappingConfig);
  const lines: Record<string, number> = {};
  r.records.forEach((rec, i) => (lines[rec.record_id] = r.lines[i]!));
  const rejectFile = r.row_errors.length > 0 ? await writeRejectFile(file, r.row_errors).catch(() => null) : null;
  return {
    file,
    fileHash: r.sha256,
    rows: r.counts.rows,
    records: r.records,
    lines,
    rowErrors: r.row_errors,
    rejected: r.rejected,
    rejectFile,
  };
}

/** A3: server row errors (by record_id) as source row errors, for the log and the reject file. */
export function serverRowErrors(
  file: string,
  lines: Record<string, number>,
  errors: ReadonlyArray<{ record_id?: string | null | undefined; field?: string | null | undefined; message: string }>,
): RowError[] {
  return errors.map((e) => ({
    file,
    line: (e.record_id ? lines[e.record_id] : undefined) ?? 0,
    column: e.field ?? 'record',
    value: e.record_id ?? '',
    reason: `server: ${e.message}`,
    code: 'INVALID_RECORD' as const,
  }));
}
