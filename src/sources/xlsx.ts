import { fdReadStream } from './open-file.js';
import type { SourceConfig } from './config.js';
import type { ByteMeter } from './meter.js';
import { SourceError } from '../model/source-error.js';
import { boundText, excerpt, excerptList } from '../model/excerpt.js';
import { checkXlsxHead } from './sniff.js';
import type { OpenExport, RowSink } from './types.js';
import { WorkbookArchive } from './xlsx/archive.js';
import { readDateStyles } from './xlsx/styles.js';
import { ListedStrings, readSharedStrings } from './xlsx/shared-strings.js';
import { readSheetRows } from './xlsx/sheet.js';
import { readWorkbookInfo, type SheetInfo } from './xlsx/workbook.js';
import { checkArchiveSizes } from './xlsx/zip-guard.js';

/**
 * Streams one sheet of an XLSX workbook into `sink`, row by row (line = the
 * sheet's row number), yielding after each inflated piece of the sheet.
 *
 * The zip is read by random access (yauzl) and its XML parts with our scanner (xlsx/xml-scan.ts), as
 * streams decoded whole. We used exceljs's streaming reader before; it
 * decodes each inflated chunk on its own, so a CJK character split across
 * two chunks came out as U+FFFD (exceljs issues #2063, #2084, #2316), it
 * read the furigana of a Japanese name instead of the name, and building a
 * Row of Cells for every row cost more than the whole rest of the read.
 *
 * Memory is bounded by the shared strings table (limits.max_shared_strings_bytes)
 * and one row (limits.max_record_bytes).
 */
export async function* readXlsxRows(
  input: OpenExport,
  source: SourceConfig,
  meter: ByteMeter,
  sink: RowSink,
  chunkBytes?: number,
): AsyncGenerator<void> {
  const { file, fd, size } = input;
  await meterWholeFile(file, fd, meter);
  const archive = await WorkbookArchive.open(file, fd, size, chunkBytes);
  try {
    checkArchiveSizes(file, archive.entries(), source.limits);
    const book = await readWorkbookInfo(archive);
    const sheet = pickSheet(file, book.sheets, source.sheet);
    const sharedStrings = book.sharedStringsPart ? await readSharedStrings(archive, book.sharedStringsPart, source.limits.max_shared_strings_bytes) : new ListedStrings([]);
    const dateStyles = book.stylesPart ? await readDateStyles(archive, book.stylesPart) : [];
    const skip = source.header.skip_lines;
    const maxChars = source.limits.max_record_bytes;
    const onRow = (cells: string[], row: number) => {
      if (row <= skip) return;
      let chars = 0;
      for (const c of cells) chars += c.length;
      if (chars > maxChars) {
        throw new SourceError('LIMIT_RECORD_BYTES', `${file}: row ${row} is longer than max_record_bytes (${maxChars}); if the export is genuine, raise limits.max_record_bytes`, {
          file,
          line: row,
          setting: 'limits.max_record_bytes',
        });
      }
      sink(cells, row);
    };
    yield* readSheetRows(archive, sheet.part!, { sharedStrings, dateStyles, date1904: book.date1904, maxChars }, onRow);
  } catch (err) {
    if (err instanceof SourceError) throw err;
    throw new SourceError('WRONG_FORMAT', `${file}: could not be read as an XLSX workbook: ${boundText((err as Error)?.message ?? String(err))}`, { file, setting: 'type' });
  } finally {
    archive.close();
  }
}

/** The file's bytes through the meter (its hash identifies the export; its size limit applies), checking the head first. */
export async function meterWholeFile(file: string, fd: number, meter: ByteMeter): Promise<void> {
  let first = true;
  for await (const chunk of fdReadStream(fd, { highWaterMark: 256 * 1024 }) as AsyncIterable<Buffer>) {
    if (first) checkXlsxHead(chunk, file);
    first = false;
    meter.add(chunk);
  }
}

/** The sheet the source names (by name, or by 1-based tab position), or the first worksheet. */
function pickSheet(file: string, sheets: readonly SheetInfo[], wanted: string | number | null): SheetInfo {
  const found = wanted === null ? sheets.find((s) => s.kind === 'worksheet') : typeof wanted === 'string' ? sheets.find((s) => s.name === wanted) : sheets[wanted - 1];
  // Sheet names come from the file: quoted as bounded, escaped excerpts.
  const listed = excerptList(sheets.map((s) => s.name), 30, 300);
  if (!found) {
    const want = wanted === null ? 'worksheet' : `sheet ${JSON.stringify(wanted)}`;
    throw new SourceError('SHEET_NOT_FOUND', `${file}: no ${want}; sheets are: ${listed}`, { file, setting: 'sheet' });
  }
  if (found.kind !== 'worksheet') {
    throw new SourceError('SHEET_NOT_FOUND', `${file}: sheet ${excerpt(found.name)} is a ${found.kind === 'chartsheet' ? 'chart sheet' : 'sheet without cells'}; sheets are: ${listed}`, {
      file,
      setting: 'sheet',
    });
  }
  if (found.part === null) {
    throw new SourceError('WRONG_FORMAT', `${file}: sheet ${excerpt(found.name)} has no cells part in the archive; the workbook is damaged — export it again`, { file, setting: 'type' });
  }
  return found;
}
