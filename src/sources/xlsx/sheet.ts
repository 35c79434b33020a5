import { SourceError } from '../../model/source-error.js';
import { boundText } from '../../model/excerpt.js';
import type { WorkbookArchive } from './archive.js';
import { isoDateText, numberText, serialDateText, unescapeXstring } from './cell-text.js';
import { scanPlainCell, scanPlainRow, type PlainCell, type PlainRow } from './plain-cell.js';
import { StringItem } from './shared-strings.js';
import { parseXml, type XmlHandlers } from './xml.js';

/** What a sheet's cells refer to elsewhere in the workbook. */
export interface SheetContext {
  sharedStrings: readonly string[];
  /** By cell format index: whether numbers in that format are dates. */
  dateStyles: readonly boolean[];
  date1904: boolean;
  /** Longest text a row may hold (max_record_bytes); a cell is refused as soon as it grows beyond. */
  maxChars: number;
  /** Every cell through the general scanner, none by the fast path (plain-cell.ts): what tests compare it with. */
  general?: boolean;
}

/** Excel's last column, XFD. */
export const MAX_COLUMN = 16_384;

/**
 * 1-based column of a cell reference (`AB12` → 28); 0 when it has no
 * letters; more than MAX_COLUMN for four letters or more.
 */
export function columnOf(ref: string): number {
  let col = 0;
  for (let i = 0; i < ref.length && i < 4; i++) {
    const c = ref.charCodeAt(i);
    if (c >= 65 && c <= 90) col = col * 26 + (c - 64);
    else if (c >= 97 && c <= 122) col = col * 26 + (c - 96);
    else break;
  }
  return col;
}

/** The row number in a cell reference (`AB12` → 12); NaN when there is none. */
function rowOf(ref: string): number {
  let i = 0;
  while (i < ref.length && ref.charCodeAt(i) > 57) i++;
  return i < ref.length ? Number(ref.slice(i)) : NaN;
}

/**
 * Streams the rows of one worksheet part to `onRow` as text cells (index 0 =
 * column A; gaps are ''), with the sheet's row number, yielding after each
 * inflated piece of the part. Rows and cells without a reference follow the
 * one before. Cells hold the text a CSV export would (see cell-text.ts).
 */
export async function* readSheetRows(archive: WorkbookArchive, part: string, ctx: SheetContext, onRow: (cells: string[], row: number) => void): AsyncGenerator<void> {
  const file = archive.file;
  const { sharedStrings, dateStyles, date1904, maxChars } = ctx;
  const inline = new StringItem();
  let rowNumber = 0;
  let cells: string[] = [];
  let col = 0;
  let type: string | undefined;
  let style = 0;
  let value = '';
  let hasValue = false;
  let inValue = false;
  let inInline = false;
  // A row without `r` takes its number from its first cell's reference when there is one.
  let rowFromCell = false;

  const refuse = (why: string) =>
    new SourceError('WRONG_FORMAT', `${file}: row ${rowNumber}: ${why}; the workbook is damaged — export it again`, { file, line: rowNumber, setting: 'type' });
  const tooLong = () =>
    new SourceError('LIMIT_RECORD_BYTES', `${file}: row ${rowNumber} is longer than max_record_bytes (${maxChars}); if the export is genuine, raise limits.max_record_bytes`, {
      file,
      line: rowNumber,
      setting: 'limits.max_record_bytes',
    });

  const text = (): string => {
    if (value === '') return '';
    switch (type) {
      case 's': {
        const s = sharedStrings[Number(value)];
        if (s === undefined) throw refuse(`refers to shared string ${boundText(value, 20)}, but the workbook has ${sharedStrings.length}`);
        return s;
      }
      case 'inlineStr':
      case 'str':
        return unescapeXstring(value);
      case 'b':
        return value === '0' || value === 'false' ? 'FALSE' : 'TRUE';
      case 'e':
        return value;
      case 'd':
        return isoDateText(value);
      default:
        return dateStyles[style] === true ? serialDateText(value, date1904) : numberText(value);
    }
  };

  // The scanner's events for cells and values, shared by the general path and the fast one (plain-cell.ts).
  const openCell = (r: string | undefined, t: string | undefined, s: string | undefined) => {
    col = r !== undefined ? columnOf(r) || col + 1 : col + 1;
    if (rowFromCell) {
      rowFromCell = false;
      const n = r !== undefined ? rowOf(r) : NaN;
      if (n > rowNumber) rowNumber = n;
    }
    // The padding below would otherwise try to allocate whatever a crafted reference asks for.
    if (col > MAX_COLUMN) throw refuse(`cell ${r !== undefined ? boundText(r, 20) : `number ${col}`} is beyond column XFD (${MAX_COLUMN}), the last one Excel has`);
    type = t;
    style = s !== undefined ? Number(s) : 0;
    value = '';
    hasValue = false;
  };
  const openValue = () => {
    inValue = true;
    value = '';
  };
  const closeValue = () => {
    inValue = false;
    hasValue = true;
  };
  const closeCell = () => {
    if (hasValue) {
      while (cells.length < col - 1) cells.push('');
      cells[col - 1] = text();
    }
  };
  const onText = (piece: string) => {
    if (inValue) {
      value += piece;
      if (value.length > maxChars) throw tooLong();
    } else if (inInline && inline.text(piece) > maxChars) throw tooLong();
  };
  const plain: PlainCell = { r: undefined, t: undefined, s: undefined, v: null };

  const handlers: XmlHandlers = {
    open(name, a) {
      switch (name) {
        case 'c':
          openCell(a.r, a.t, a.s);
          return;
        case 'v':
          openValue();
          return;
        case 'is':
          inInline = true;
          return;
        case 'row':
          rowFromCell = a.r === undefined;
          rowNumber = a.r !== undefined ? Number(a.r) : rowNumber + 1;
          cells = [];
          col = 0;
          return;
        default:
          if (inInline) inline.open(name);
      }
    },
    close(name) {
      switch (name) {
        case 'v':
          closeValue();
          return;
        case 'c':
          closeCell();
          return;
        case 'is':
          inInline = false;
          value = inline.take();
          hasValue = true;
          return;
        case 'row':
          onRow(cells, rowNumber);
          return;
        default:
          if (inInline) inline.close(name);
      }
    },
    text: onText,
  };
  // The events the scanner would have given for a plain cell: open c, open v, its text (when any), close v, close c.
  const replayCell = (cell: PlainCell) => {
    openCell(cell.r, cell.t, cell.s);
    if (cell.v !== null) {
      openValue();
      if (cell.v !== '') onText(cell.v);
      closeValue();
    }
    closeCell();
  };
  const plainRow: PlainRow = { r: undefined, cells: [], n: 0 };
  if (ctx.general !== true) {
    handlers.element = (x, lt) => {
      // A whole row of plain cells at once, when it is all there: the scanner's work per row tag was a tenth of the read (issue 18).
      if (x.charCodeAt(lt + 1) === 0x72) {
        const end = scanPlainRow(x, lt, plainRow);
        if (end < 0) return -1;
        handlers.open('row', plainRow.r !== undefined ? { r: plainRow.r } : {});
        for (let i = 0; i < plainRow.n; i++) replayCell(plainRow.cells[i]!);
        handlers.close('row');
        return end;
      }
      const end = scanPlainCell(x, lt, plain);
      if (end < 0) return -1;
      replayCell(plain);
      return end;
    };
  }
  yield* parseXml(file, part, archive.text(part), handlers, () => (rowNumber > 0 ? `after row ${rowNumber}` : ''));
}
