import type { SourceConfig } from './config.js';
import type { ByteMeter } from './meter.js';
import type { RowBatch } from './types.js';
import { SourceError } from './errors.js';

/** Streams an XLSX sheet as batches of rows (placeholder until the reader lands). */
export async function* readXlsxRows(file: string, _source: SourceConfig, _meter: ByteMeter): AsyncGenerator<RowBatch> {
  throw new SourceError('WRONG_FORMAT', `${file}: XLSX not supported yet`, { file });
}
