import { SourceError } from '../model/source-error.js';
import { bomEncoding } from './decode.js';
import type { SourceConfig } from './config.js';

// What the CSV reader gathers before this check (csv.ts).
const SNIFF_BYTES = 8;
const ZIP = [0x50, 0x4b, 0x03, 0x04];
const OLE = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1];

function startsWith(head: Uint8Array, magic: number[]): boolean {
  return head.length >= magic.length && magic.every((b, i) => head[i] === b);
}

/**
 * Refuse a CSV source whose first bytes say it is something else: a zip
 * (XLSX), an old binary XLS, other binary data, or a UTF-16 file read as a
 * one-byte encoding (and the reverse).
 */
export function checkCsvHead(head: Uint8Array, source: SourceConfig, file: string): void {
  const ctx = { file, setting: 'type' };
  if (startsWith(head, ZIP)) throw new SourceError('WRONG_FORMAT', `${file}: is a zip archive (an XLSX workbook?), not CSV; set type: xlsx`, ctx);
  if (startsWith(head, OLE)) throw new SourceError('WRONG_FORMAT', `${file}: is a legacy binary Excel (.xls) file, not CSV; save it as CSV or XLSX`, ctx);
  const bom = bomEncoding(head);
  const utf16 = source.encoding === 'utf-16le' || source.encoding === 'utf-16be';
  if (bom === 'utf-8' && source.encoding !== 'utf-8' && source.encoding !== 'auto') {
    throw new SourceError('BAD_ENCODING', `${file}: starts with a UTF-8 byte order mark but encoding is ${source.encoding}; set encoding: utf-8 or auto`, { file, setting: 'encoding' });
  }
  if ((bom === 'utf-16le' || bom === 'utf-16be') && !utf16 && source.encoding !== 'auto') {
    throw new SourceError('BAD_ENCODING', `${file}: starts with a ${bom} byte order mark but encoding is ${source.encoding}; set encoding: ${bom} or auto`, {
      file,
      setting: 'encoding',
    });
  }
  // The first bytes only: a NUL further on is damage, refused by ByteGuard.
  if (!utf16 && bom !== 'utf-16le' && bom !== 'utf-16be' && head.subarray(0, SNIFF_BYTES).includes(0)) {
    throw new SourceError('WRONG_FORMAT', `${file}: contains NUL bytes, so it is binary data or UTF-16 text, not ${source.encoding} CSV`, ctx);
  }
}

/** Refuse an XLSX source that is not a zip archive at all. */
export function checkXlsxHead(head: Uint8Array, file: string): void {
  if (startsWith(head, ZIP)) return;
  const ctx = { file, setting: 'type' };
  if (startsWith(head, OLE)) {
    // Excel also wraps a password-protected .xlsx in this container, so both causes are named.
    throw new SourceError('WRONG_FORMAT', `${file}: is a legacy binary Excel (.xls) file or a password-protected workbook, not an XLSX workbook; save it as .xlsx without a password`, ctx);
  }
  throw new SourceError('WRONG_FORMAT', `${file}: is ${head.length === 0 ? 'empty' : 'not a zip archive'}, so not an XLSX workbook`, ctx);
}
