import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fitName, splitExt } from '../file-names.js';
import type { RowError } from '../model/row-error.js';

/** Where the reject file of an export goes: beside it, `<name>.rejected.csv` (a long name shortened to fit, fitName). */
export function rejectFilePath(file: string): string {
  return join(dirname(file), fitName(splitExt(basename(file)).stem, '.rejected.csv'));
}

function csvCell(value: string | number): string {
  let s = String(value);
  // A text starting like a formula is run by spreadsheet programs (CSV injection): a leading ' keeps it text.
  if (typeof value === 'string' && /^[=+\-@\t\r]/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/**
 * Write the row errors of one read as CSV beside the processed file (line in
 * the original file, column, value, code, reason); UTF-8 with a BOM so that
 * spreadsheet programs show Japanese text right. Written to a temporary name
 * then renamed, so a reader never sees half a file. Returns the path.
 */
export async function writeRejectFile(file: string, rowErrors: readonly RowError[], opts: { path?: string } = {}): Promise<string> {
  const path = opts.path ?? rejectFilePath(file);
  const lines = ['line,column,value,code,reason'];
  for (const e of rowErrors) lines.push([e.line, e.column, e.value, e.code, e.reason].map(csvCell).join(','));
  // A short dot-name: the watcher ignores it, and it fits whatever the export's name.
  const tmp = join(dirname(path), `.dc-reject.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  // The folder is the POS's: a link planted under the temporary name must not be written through.
  // rm removes such an entry; 'wx' (O_EXCL) refuses one put back in between. rename replaces a link at `path` itself.
  await rm(tmp, { force: true });
  await writeFile(tmp, `\uFEFF${lines.join('\r\n')}\r\n`, { encoding: 'utf8', flag: 'wx' });
  await rename(tmp, path);
  return path;
}
