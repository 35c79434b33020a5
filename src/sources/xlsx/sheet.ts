import { SourceError } from '../../model/source-error.js';
import { boundText } from '../../model/excerpt.js';
import type { WorkbookArchive } from './archive.js';
import { isoDateText, numberText, serialDateText, unescapeXstring } from './cell-text.js';
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

  const handlers: XmlHandlers = {
    open(name, a) {
      switch (name) {
        case 'c':
          col = a.r !== undefined ? columnOf(a.r) || col + 1 : col + 1;
          if (rowFromCell) {
            rowFromCell = false;
            const r = a.r !== undefined ? rowOf(a.r) : NaN;
            if (r > rowNumber) rowNumber = r;
          }
          // The padding below would otherwise try to allocate whatever a crafted reference asks for.
          if (col > MAX_COLUMN) throw refuse(`cell ${a.r !== undefined ? boundText(a.r, 20) : `number ${col}`} is beyond column XFD (${MAX_COLUMN}), the last one Excel has`);
          type = a.t;
          style = a.s !== undefined ? Number(a.s) : 0;
          value = '';
          hasValue = false;
          return;
        case 'v':
          inValue = true;
          value = '';
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
          inValue = false;
          hasValue = true;
          return;
        case 'c':
          if (hasValue) {
            while (cells.length < col - 1) cells.push('');
            cells[col - 1] = text();
          }
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
    text(piece) {
      if (inValue) {
        value += piece;
        if (value.length > maxChars) throw tooLong();
      } else if (inInline && inline.text(piece) > maxChars) throw tooLong();
    },
  };
  yield* parseXml(file, part, archive.text(part), handlers, () => (rowNumber > 0 ? `after row ${rowNumber}` : ''));
}
