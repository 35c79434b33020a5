/** Codes of row errors: one row could not become a valid record. */
export type RowErrorCode =
  | 'TRANSFORM_FAILED'
  | 'INVALID_RECORD'
  | 'DUPLICATE_KEY'
  | 'PRECISION_LOST'
  | 'EXTRA_CELLS'
  /** A value under a boolean that is not one of its words, or an empty cell the mapping gave no meaning (issue 11). */
  | 'INVALID_BOOLEAN'
  | 'COLUMN_COUNT'
  /** A row of an update feed whose record does not exist (issue 13): counted and listed, not an error of the file. */
  | 'UNMATCHED_RECORD'
  /** A change list's create of a record that exists already (issue 13): counted and listed like UNMATCHED_RECORD, not applied. */
  | 'RECORD_EXISTS'
  /** A change list's row whose command word is none of the configured ones (issue 13). */
  | 'INVALID_COMMAND';

/** One problem with one row (issue 3): where it is, what was there, why it is refused. */
export interface RowError {
  file: string;
  /** 1-based physical line of the file (CSV, preamble and header counted) or sheet row (XLSX). */
  line: number;
  /** Column header (or record field when no single column is to blame). */
  column: string;
  /** The offending value, truncated to 100 characters. */
  value: string;
  reason: string;
  code: RowErrorCode;
}
