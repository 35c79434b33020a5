/** Reading exports: the public surface of src/sources (see read.ts for the contract). */
export { readExport, readExportFile, ExportReader, type CollectedExport, type ReadOptions } from './read.js';
export { sourceConfigSchema, type SourceConfig, type SourceConfigInput, SOURCE_ENCODINGS } from './config.js';
export { SourceError, SOURCE_ERROR_CODES, type SourceErrorCode } from '../model/source-error.js';
export { writeRejectFile, rejectFilePath } from './reject-file.js';
export type { ExportResult, ExportCounts, RecordBatch } from './types.js';
export type { RowError, RowErrorCode } from '../model/row-error.js';
