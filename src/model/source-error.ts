import { ConnectorError, type ErrorContext } from '../errors.js';
import { boundText } from './excerpt.js';

const MAX_MESSAGE_CHARS = 2000;

/**
 * File-level failures of reading an export. Every one of them means "nothing
 * from this file is used" (action `reject`), except a missing or unreadable
 * file, which may appear later, and a file that changed while it was read,
 * which is read again (action `retry`).
 */
export const SOURCE_ERROR_CODES = [
  'FILE_NOT_FOUND',
  'FILE_UNREADABLE',
  'FILE_CHANGED',
  'LINK_NOT_FOLLOWED',
  'NOT_REGULAR_FILE',
  'EMPTY_FILE',
  'HEADER_ONLY',
  'HEADER_NOT_FOUND',
  'TRUNCATED',
  'MALFORMED_CSV',
  'BAD_ENCODING',
  'WRONG_FORMAT',
  'SHEET_NOT_FOUND',
  'ZIP_BOMB',
  'ZIP_CORRUPT',
  'LIMIT_FILE_BYTES',
  'LIMIT_ROWS',
  'LIMIT_RECORD_BYTES',
  'LIMIT_SHARED_STRINGS',
  'DUPLICATE_HEADER',
  'REPEATED_HEADER',
  'COLUMN_NOT_FOUND',
  'AMBIGUOUS_COLUMN',
  'ROW_ERRORS',
] as const;
export type SourceErrorCode = (typeof SOURCE_ERROR_CODES)[number];

/** A whole export was refused; `context.file` (and `line` when known) say where. */
export class SourceError extends ConnectorError {
  declare readonly code: SourceErrorCode;

  constructor(code: SourceErrorCode, message: string, context: ErrorContext, cause?: unknown) {
    const action = code === 'FILE_NOT_FOUND' || code === 'FILE_UNREADABLE' || code === 'FILE_CHANGED' ? 'retry' : 'reject';
    // Messages reach logs, /healthz and alert calls: bytes of a file name or content must not forge lines there.
    super(code, boundText(message, MAX_MESSAGE_CHARS), { action, context, cause });
    this.name = 'SourceError';
  }
}
