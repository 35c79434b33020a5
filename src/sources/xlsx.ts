import { createReadStream } from 'node:fs';
import { Transform } from 'node:stream';
import ExcelJS from 'exceljs';
import type { SourceConfig } from './config.js';
import type { ByteMeter } from './meter.js';
import { SourceError } from './errors.js';
import { cellText } from './cell.js';
import { checkXlsxHead } from './sniff.js';
import { checkXlsxArchive } from './zip-guard.js';

// Records mapped from these rows stay alive until the consumer takes them; few enough to die young.
const YIELD_ROWS = 256;

interface SheetReader extends AsyncIterable<ExcelJS.Row> {
  id: number | string;
  name: string;
}

/** Bytes → meter (hash, size limit) on their way into the unzipper. */
function metered(file: string, meter: ByteMeter): Transform {
  let first = true;
  const input = createReadStream(file, { highWaterMark: 256 * 1024 });
  const tee = new Transform({
    transform(chunk: Buffer, _enc, done) {
      try {
        if (first) checkXlsxHead(chunk, file);
        first = false;
        meter.add(chunk);
        done(null, chunk);
      } catch (err) {
        done(err as Error);
      }
    },
  });
  input.on('error', (err) => tee.destroy(err));
  return input.pipe(tee);
}

/**
 * Streams one sheet of an XLSX workbook into `sink`, row by row (line = sheet
 * row number), with exceljs's streaming reader, yielding every `YIELD_ROWS`
 * rows: shared strings are cached, rows are not, so memory stays bounded by
 * the strings table. The zip central directory is checked for bombs before
 * anything is inflated.
 */
export async function* readXlsxRows(file: string, source: SourceConfig, meter: ByteMeter, sink: (cells: string[], line: number) => void): AsyncGenerator<void> {
  const head = Buffer.alloc(8);
  const fh = await import('node:fs/promises').then((fs) => fs.open(file, 'r'));
  try {
    await fh.read(head, 0, 8, 0);
  } finally {
    await fh.close();
  }
  checkXlsxHead(head, file);
  await checkXlsxArchive(file, source.limits);

  const input = metered(file, meter);
  const reader = new ExcelJS.stream.xlsx.WorkbookReader(input, {
    sharedStrings: 'cache',
    styles: 'cache', // needed to tell dates from numbers (number formats)
    hyperlinks: 'ignore',
    worksheets: 'emit',
    entries: 'ignore',
  });
  const seen: string[] = [];
  const maxChars = source.limits.max_record_bytes;
  const skip = source.header.skip_lines;
  try {
    for await (const sheet of reader as unknown as AsyncIterable<SheetReader>) {
      seen.push(sheet.name);
      if (!isWanted(sheet, source.sheet, reader, seen.length)) {
        // Drain a skipped sheet: exceljs removes a spooled sheet's temp file as
        // soon as it moves on, and an unread sheet's stream would then open a
        // file that is gone (an uncaught ENOENT).
        for await (const _row of sheet) void _row;
        continue;
      }
      let pending = 0;
      for await (const row of sheet) {
        if (row.number <= skip) continue;
        const values = row.values as unknown[];
        const cells: string[] = [];
        let chars = 0;
        for (let i = 1; i < values.length; i++) {
          const t = cellText(values[i]);
          chars += t.length;
          cells.push(t);
        }
        if (chars > maxChars) {
          throw new SourceError('LIMIT_RECORD_BYTES', `${file}: row ${row.number} is longer than max_record_bytes (${maxChars})`, {
            file,
            line: row.number,
            setting: 'limits.max_record_bytes',
          });
        }
        sink(cells, row.number);
        if (++pending >= YIELD_ROWS) {
          pending = 0;
          yield;
        }
      }
      yield;
      return;
    }
  } catch (err) {
    if (err instanceof SourceError) throw err;
    throw new SourceError('WRONG_FORMAT', `${file}: could not be read as an XLSX workbook: ${(err as Error)?.message ?? String(err)}`, { file, setting: 'type' }, err);
  } finally {
    input.destroy();
  }
  const want = source.sheet === null ? 'any sheet' : `sheet ${JSON.stringify(source.sheet)}`;
  throw new SourceError('SHEET_NOT_FOUND', `${file}: no ${want}; sheets are: ${seen.map((s) => JSON.stringify(s)).join(', ') || 'none'}`, {
    file,
    setting: 'sheet',
  });
}

function isWanted(sheet: SheetReader, wanted: string | number | null, reader: unknown, position: number): boolean {
  if (typeof wanted === 'string') return sheet.name === wanted;
  const index = wanted ?? 1;
  // Position in the workbook's tab order when workbook.xml has been read; else the order of sheets in the archive.
  const sheets = (reader as { model?: { sheets?: Array<{ name: string }> } }).model?.sheets;
  const byOrder = sheets?.[index - 1]?.name;
  return byOrder !== undefined ? sheet.name === byOrder : position === index;
}
