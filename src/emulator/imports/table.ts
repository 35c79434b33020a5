import type ExcelJS from 'exceljs';
import iconv from 'iconv-lite';
import { parse } from 'csv-parse/sync';
import { validationFailed } from '../http-error.js';

/** A cell value as read from a file. */
export type Cell = string | number | boolean | null;

/** A file read into a header and data rows; `row` is 1-based over data lines, header excluded (A3). */
export interface Table {
  header: string[];
  rows: { row: number; cells: Cell[] }[];
}

/** A14: CSV encodings the upload accepts. */
export const CSV_ENCODINGS = ['utf-8', 'shift_jis', 'cp932', 'euc-jp', 'euc-kr'] as const;

/** True when the bytes are a ZIP container (XLSX). */
export function looksLikeXlsx(bytes: Buffer): boolean {
  return bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04;
}

/** A14: decode CSV bytes (utf-8 with or without BOM, shift_jis, cp932, euc-jp, euc-kr) and split into rows. */
export function readCsv(bytes: Buffer, encoding = 'utf-8'): Table {
  const enc = encoding.trim().toLowerCase().replace(/^utf8$/, 'utf-8');
  if (!(CSV_ENCODINGS as readonly string[]).includes(enc)) {
    throw validationFailed(`encoding must be one of ${CSV_ENCODINGS.join(', ')}`, { field: 'encoding' });
  }
  // iconv-lite strips a UTF-8 BOM when decoding.
  const text = iconv.decode(bytes, enc);
  let lines: string[][];
  try {
    lines = parse(text, { bom: true, skip_empty_lines: true, relax_column_count: true }) as string[][];
  } catch (cause) {
    throw validationFailed(`the CSV file could not be parsed: ${(cause as Error).message}`, { field: 'file' });
  }
  const [header, ...data] = lines;
  if (!header) throw validationFailed('the file has no header row', { field: 'file' });
  return { header: header.map((h) => h.trim()), rows: data.map((cells, i) => ({ row: i + 1, cells })) };
}

/** A14: read one sheet (by name, default the first) of an XLSX file. */
export async function readXlsx(bytes: Buffer, sheet?: string): Promise<Table> {
  // Loaded on the first XLSX upload only: exceljs and its dependencies are ~25 MB of a process's memory.
  const { default: ExcelJS } = await import('exceljs');
  const workbook = new ExcelJS.Workbook();
  try {
    await workbook.xlsx.load(bytes as unknown as ArrayBuffer);
  } catch (cause) {
    throw validationFailed(`the XLSX file could not be read: ${(cause as Error).message}`, { field: 'file' });
  }
  const ws = sheet === undefined ? workbook.worksheets[0] : workbook.getWorksheet(sheet);
  if (!ws) {
    throw validationFailed(sheet === undefined ? 'the workbook has no sheet' : `no sheet named ${sheet}`, {
      field: 'sheet',
      sheets: workbook.worksheets.map((w) => w.name),
    });
  }
  let header: string[] | null = null;
  let headerRow = 0;
  const rows: Table['rows'] = [];
  ws.eachRow({ includeEmpty: false }, (r, rowNumber) => {
    const cells: Cell[] = [];
    for (let c = 1; c <= r.cellCount; c++) cells.push(cellValue(r.getCell(c).value));
    if (!header) {
      header = cells.map((v) => (v === null ? '' : String(v).trim()));
      headerRow = rowNumber;
      return;
    }
    if (cells.every((v) => v === null || v === '')) return;
    rows.push({ row: rowNumber - headerRow, cells });
  });
  if (!header) throw validationFailed('the sheet has no header row', { field: 'file' });
  return { header, rows };
}

/** Flatten an exceljs cell value to text, number, boolean or null. */
function cellValue(v: ExcelJS.CellValue): Cell {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') return v;
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'object') {
    if ('richText' in v) return v.richText.map((t) => t.text).join('');
    if ('formula' in v || 'sharedFormula' in v) return cellValue((v as { result?: ExcelJS.CellValue }).result ?? null);
    if ('text' in v) return String((v as { text: unknown }).text);
    if ('error' in v) return null;
  }
  return String(v);
}
