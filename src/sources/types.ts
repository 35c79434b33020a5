import type { DatasetRecord } from '../model/record.js';
import type { SourceError } from '../model/source-error.js';
import type { RowError } from '../model/row-error.js';
import type { KeepTally } from '../mapping/compile.js';

/** An export opened for one read (open-file.ts): its path for messages, its descriptor, its size when opened. */
export interface OpenExport {
  file: string;
  fd: number;
  size: number;
}

/**
 * Where a reader hands each raw row: its cells and 1-based line (CSV: physical
 * line; XLSX: sheet row). `unterminated`: the file's last row, not followed by
 * a line break (CSV only).
 */
export type RowSink = (cells: string[], line: number, unterminated?: boolean) => void;

/** Mapped, validated records, in file order, with the line each came from. */
export interface RecordBatch {
  records: DatasetRecord[];
  lines: number[];
}

/** Counts of one read. */
export interface ExportCounts {
  /** Data rows after the header that were not blank. */
  rows: number;
  /** Rows dropped by the mapping's filters (not errors). */
  filtered: number;
  /** Valid records produced. */
  records: number;
  /** Rows with at least one row error. */
  bad_rows: number;
  /** Row errors in total (a row may have several). */
  row_errors: number;
}

/** What a finished read says about the file. */
export interface ExportResult {
  file: string;
  /** Hex SHA-256 of the file's bytes (files are identified by content, house style 7). */
  sha256: string;
  bytes: number;
  /** Cleaned header cells. */
  header: string[];
  counts: ExportCounts;
  /** Row errors, at most `max_row_errors_kept` of them (see `row_errors_truncated`). */
  row_errors: RowError[];
  row_errors_truncated: boolean;
  /** The record_ids of bad rows whose id cell could be read (all of them: an update feed counts them as listed, issue 13). */
  bad_ids: string[];
  /** Bad rows whose record_id could not be read. */
  bad_without_id: number;
  /** Rows whose aliases listed one alias more than once; the mapping kept it once. */
  aliases_merged_rows: number;
  /** What each of the mapping's keep_when_match filters did (a feed's rows: among them); absent when not counted. */
  kept_by_filter?: readonly KeepTally[];
  /** The CSV came compressed (gzip, or the one file of a zip), as its content showed; null when plain. */
  compression: 'gzip' | 'zip' | null;
  /** Set when nothing from the file may be used. */
  rejected: SourceError | null;
}
