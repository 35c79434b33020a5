import iconv from 'iconv-lite';
import { compressionOf, openCsvBytes, readHead, type Compression } from '../../sources/compressed.js';
import { sourceConfigSchema, type SourceConfig } from '../../sources/config.js';
import { readCsvRows } from '../../sources/csv.js';
import { SourceError } from '../../model/source-error.js';
import { ByteMeter } from '../../sources/meter.js';
import { ALWAYS_FOLLOW, closeFile, openRegularFile } from '../../sources/open-file.js';
import type { OpenExport } from '../../sources/types.js';
import { guessEncoding, type EncodingGuess } from './encoding.js';
import { guessDelimiter, rowWidth, type DelimiterGuess, type SampleRow } from './layout.js';

/** Bytes looked at to tell the encoding and delimiter; rows read to tell the header and the columns. */
const SAMPLE_BYTES = 1024 * 1024;
export const SAMPLE_ROWS = 2000;
const SHEET_ROWS = 200;

/** What `init` read of a CSV export. */
export interface CsvSample {
  kind: 'csv';
  compression: Compression;
  encoding: EncodingGuess;
  delimiter: DelimiterGuess;
  rows: SampleRow[];
  /** A file-level problem met within the rows read (bad bytes further on, a quote never closed). */
  problem: SourceError | null;
}

/** One sheet of a workbook, with its first rows. */
export interface SheetSample {
  name: string;
  position: number;
  rows: SampleRow[];
}

export interface XlsxSample {
  kind: 'xlsx';
  sheets: SheetSample[];
  /** Sheets that are not worksheets (charts), by name. */
  otherSheets: string[];
}

/** A source config with every option at its default but those given. */
export function sourceWith(options: Record<string, unknown>): SourceConfig {
  return sourceConfigSchema.parse(options);
}

/** Read the first rows of an export, telling its format (and for CSV its encoding and delimiter) from its content. */
export async function sampleExport(file: string): Promise<CsvSample | XlsxSample> {
  // The operator named the file: a link is followed (as for sync --file).
  const head = await withOpened(file, (input) => readHead(input.fd, 8));
  if (head.length === 0) throw new SourceError('EMPTY_FILE', `${file}: is empty (0 bytes)`, { file });
  const compression = compressionOf(head, file);
  if (compression === 'zip' && (await isWorkbook(file))) return sampleWorkbook(file);
  const csv = sourceWith({ type: 'csv' });
  const { bytes, complete } = await firstBytes(file, compression, csv);
  const encoding = guessEncoding(bytes, complete);
  const text = iconv.decode(bytes, encoding.encoding === 'cp932' ? 'cp932' : encoding.encoding, { stripBOM: true });
  const delimiter = guessDelimiter(text);
  const source = sourceWith({ type: 'csv', encoding: encoding.encoding, delimiter: delimiter.delimiter });
  const rows: SampleRow[] = [];
  let problem: SourceError | null = null;
  try {
    const meter = new ByteMeter(file, Number.MAX_SAFE_INTEGER);
    await withOpened(file, async (input) => {
      for await (const _ of readCsvRows(input, source, meter, (cells, line) => rows.length < SAMPLE_ROWS && rows.push({ cells, line }), undefined, compression)) {
        if (rows.length >= SAMPLE_ROWS) break;
      }
    });
  } catch (err) {
    if (!(err instanceof SourceError)) throw err;
    problem = err;
  }
  return { kind: 'csv', compression, encoding, delimiter, rows, problem };
}

/** The first SAMPLE_BYTES of the CSV's bytes (decompressed), and whether that is all of them. */
async function firstBytes(file: string, compression: Compression, source: SourceConfig): Promise<{ bytes: Buffer; complete: boolean }> {
  return withOpened(file, async (opened) => {
    const input = await openCsvBytes(opened, compression, source, new ByteMeter(file, Number.MAX_SAFE_INTEGER), 64 * 1024);
    const chunks: Buffer[] = [];
    let size = 0;
    let complete = true;
    try {
      for await (const chunk of input.bytes()) {
        chunks.push(chunk);
        size += chunk.length;
        if (size >= SAMPLE_BYTES) {
          complete = false;
          break;
        }
      }
    } finally {
      input.close();
    }
    return { bytes: Buffer.concat(chunks).subarray(0, SAMPLE_BYTES), complete };
  });
}

/** Run `fn` on the export opened as a read opens it (a regular file; see open-file.ts), closing it after. */
async function withOpened<T>(file: string, fn: (input: OpenExport) => Promise<T>): Promise<T> {
  const opened = await openRegularFile(file, ALWAYS_FOLLOW);
  try {
    return await fn({ file, fd: opened.fd, size: opened.size });
  } finally {
    await closeFile(opened.fd);
  }
}

async function isWorkbook(file: string): Promise<boolean> {
  const { WorkbookArchive } = await import('../../sources/xlsx/archive.js');
  return withOpened(file, async (input) => {
    const archive = await WorkbookArchive.open(file, input.fd, input.size);
    try {
      return archive.has('[Content_Types].xml') && (archive.has('xl/workbook.xml') || archive.entries().some((e) => /workbook\.xml$/i.test(e.name)));
    } finally {
      archive.close();
    }
  });
}

/** The first rows of every worksheet, read by the connector's own XLSX reader. */
async function sampleWorkbook(file: string): Promise<XlsxSample> {
  const { readXlsxRows } = await import('../../sources/xlsx.js');
  const { WorkbookArchive } = await import('../../sources/xlsx/archive.js');
  const { readWorkbookInfo } = await import('../../sources/xlsx/workbook.js');
  const info = await withOpened(file, async (input) => {
    const archive = await WorkbookArchive.open(file, input.fd, input.size);
    try {
      return await readWorkbookInfo(archive);
    } finally {
      archive.close();
    }
  });
  const sheets: SheetSample[] = [];
  for (const s of info.sheets) {
    if (s.kind !== 'worksheet' || s.part === null) continue;
    const rows: SampleRow[] = [];
    const source = sourceWith({ type: 'xlsx', sheet: s.position });
    await withOpened(file, async (input) => {
      for await (const _ of readXlsxRows(input, source, new ByteMeter(file, Number.MAX_SAFE_INTEGER), (cells, line) => rows.length < SHEET_ROWS && rows.push({ cells, line }))) {
        if (rows.length >= SHEET_ROWS) break;
      }
    });
    sheets.push({ name: s.name, position: s.position, rows });
  }
  return { kind: 'xlsx', sheets, otherSheets: info.sheets.filter((s) => s.kind !== 'worksheet').map((s) => s.name) };
}

/**
 * How much a sheet looks like a table of records: rows of the same width
 * (two columns or more) below a header. A README or notes sheet of one
 * column of prose scores low.
 */
export function tableScore(rows: SampleRow[]): number {
  const widths = rows.map((r) => rowWidth(r.cells)).filter((w) => w >= 2);
  if (widths.length < 2) return 0;
  const counts = new Map<number, number>();
  for (const w of widths) counts.set(w, (counts.get(w) ?? 0) + 1);
  let best = 0;
  for (const [w, n] of counts) best = Math.max(best, w * n);
  return best;
}
