import { SourceError } from '../../model/source-error.js';
import { boundText } from '../../model/excerpt.js';
import type { WorkbookArchive } from './archive.js';
import { isoDateText, numberText, serialDateText, unescapeXstring } from './cell-text.js';
import { MAX_ROW_ATTRIBUTES, MORE, asciiText, plainRunShortcut, columnAt, columnAtBytes, numberAt, plainAttributeEndAt, plainValueEndAt, scanPlainCell, scanPlainRowTag, type PlainCell } from './plain-cell.js';
import { StringItem, type StringTable } from './shared-strings.js';
import { parseXml, type XmlHandlers } from './xml.js';

/** What a sheet's cells refer to elsewhere in the workbook. */
export interface SheetContext {
  sharedStrings: StringTable;
  /** By cell format index: whether numbers in that format are dates. */
  dateStyles: readonly boolean[];
  date1904: boolean;
  /** Longest text a row may hold (max_record_bytes); a cell is refused as soon as it grows beyond. */
  maxChars: number;
  /** Every cell through the general scanner, none by the fast path (plain-cell.ts): what tests compare it with. */
  general?: boolean;
}

/** The most bytes of a plain row held back from one inflated chunk to the next, to be read as bytes (beyond: as text). */
const MAX_HELD_ROW = 64 * 1024;

/** Excel's last column, XFD. */
export const MAX_COLUMN = 16_384;

/**
 * 1-based column of a cell reference (`AB12` → 28); 0 when it has no
 * letters; more than MAX_COLUMN for four letters or more.
 */
export function columnOf(ref: string): number {
  return columnAt(ref, 0, ref.length);
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
  /** Elements c, v and is open: a row read whole by the fast path must not be inside one. */
  let inside = 0;
  // A row without `r` takes its number from its first cell's reference when there is one.
  let rowFromCell = false;

  const refuseAt = (row: number, why: string) =>
    new SourceError('WRONG_FORMAT', `${file}: row ${row}: ${why}; the workbook is damaged — export it again`, { file, line: row, setting: 'type' });
  const tooLongAt = (row: number) =>
    new SourceError('LIMIT_RECORD_BYTES', `${file}: row ${row} is longer than max_record_bytes (${maxChars}); if the export is genuine, raise limits.max_record_bytes`, {
      file,
      line: row,
      setting: 'limits.max_record_bytes',
    });
  const tooLong = () => tooLongAt(rowNumber);
  const beyondLastColumn = (row: number, r: string | undefined, c: number) =>
    refuseAt(row, `cell ${r !== undefined ? boundText(r, 20) : `number ${c}`} is beyond column XFD (${MAX_COLUMN}), the last one Excel has`);
  const noSuchString = (row: number, v: string) => refuseAt(row, `refers to shared string ${boundText(v, 20)}, but the workbook has ${sharedStrings.length}`);

  /** A cell's text from its type (`t`), value and style, in row `row`. */
  const cellText = (t: string | undefined, v: string, s: number, row: number): string => {
    if (v === '') return '';
    switch (t) {
      case 's': {
        const str = sharedStrings.get(Number(v));
        if (str === undefined) throw noSuchString(row, v);
        return str;
      }
      case 'inlineStr':
      case 'str':
        return unescapeXstring(v);
      case 'b':
        return v === '0' || v === 'false' ? 'FALSE' : 'TRUE';
      case 'e':
        return v;
      case 'd':
        return isoDateText(v);
      default:
        return dateStyles[s] === true ? serialDateText(v, date1904) : numberText(v);
    }
  };
  const text = (): string => cellText(type, value, style, rowNumber);

  // The scanner's events for cells and values, shared by the general path and the fast one (plain-cell.ts).
  const openCell = (r: string | undefined, t: string | undefined, s: string | undefined) => {
    col = r !== undefined ? columnOf(r) || col + 1 : col + 1;
    if (rowFromCell) {
      rowFromCell = false;
      const n = r !== undefined ? rowOf(r) : NaN;
      if (n > rowNumber) rowNumber = n;
    }
    // The padding below would otherwise try to allocate whatever a crafted reference asks for.
    if (col > MAX_COLUMN) throw beyondLastColumn(rowNumber, r, col);
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
          inside++;
          openCell(a.r, a.t, a.s);
          return;
        case 'v':
          inside++;
          openValue();
          return;
        case 'is':
          inside++;
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
          inside--;
          closeValue();
          return;
        case 'c':
          inside--;
          closeCell();
          return;
        case 'is':
          inside--;
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
  // The fast path for a whole row (issue 18), on the part's bytes before they are decoded (ByteShortcut, archive.ts):
  // the cells' text straight off the bytes, with no string made for a reference, type, style or strings index;
  // the state it leaves is what the scanner's events would have left. MORE when the bytes end inside the row.
  const rowTag = new Int32Array(2 * MAX_ROW_ATTRIBUTES);
  const rowRef = new Int32Array(2);
  const plainRow = (x: Buffer, lt: number): number => {
    let j = scanPlainRowTag(x, lt, rowTag, rowRef);
    if (j < 0) return j;
    let fromCell = rowRef[0]! < 0;
    let row = fromCell ? rowNumber + 1 : numberAt(x, rowRef[0]!, rowRef[1]!);
    const out: string[] = [];
    const n = x.length;
    let c = 0;
    for (;;) {
      if (j + 1 >= n) return MORE;
      if (x[j] !== 0x3c) return -1;
      const k = x[j + 1];
      if (k === 0x2f) {
        if (j + 5 >= n) return MORE;
        if (x[j + 2] !== 0x72 || x[j + 3] !== 0x6f || x[j + 4] !== 0x77 || x[j + 5] !== 0x3e) return -1; // </row>
        rowNumber = row;
        rowFromCell = fromCell;
        cells = out;
        col = c;
        onRow(out, row);
        return j + 6;
      }
      if (k !== 0x63) return -1; // c
      // The cell's start tag: one space, a one-letter name (r, t or s, each once), =", a plain value; anything else is the scanner's.
      let r0 = -1;
      let r1 = -1;
      let t0 = -1;
      let t1 = -1;
      let s0 = -1;
      let s1 = -1;
      let q = j + 2;
      let empty = false;
      for (;;) {
        if (q + 3 >= n) return MORE;
        const a = x[q];
        if (a === 0x3e) break; // >
        if (a === 0x2f) {
          if (x[q + 1] !== 0x3e) return -1;
          empty = true; // <c …/>: a cell with no value
          break;
        }
        if (a !== 0x20 || x[q + 2] !== 0x3d || x[q + 3] !== 0x22) return -1;
        const e = plainAttributeEndAt(x, q + 4);
        if (e < 0) return e;
        const name = x[q + 1];
        if (name === 0x72 && r0 < 0) {
          r0 = q + 4;
          r1 = e;
        } else if (name === 0x74 && t0 < 0) {
          t0 = q + 4;
          t1 = e;
        } else if (name === 0x73 && s0 < 0) {
          s0 = q + 4;
          s1 = e;
        } else return -1;
        q = e + 1;
      }
      const to = empty ? 0 : plainValueEndAt(x, q + 1);
      if (to < 0) return to;
      c = (r0 >= 0 ? columnAtBytes(x, r0, r1) : 0) || c + 1;
      if (fromCell) {
        fromCell = false;
        const first = r0 >= 0 ? rowOf(asciiText(x, r0, r1)) : NaN;
        if (first > row) row = first;
      }
      if (c > MAX_COLUMN) throw beyondLastColumn(row, r0 >= 0 ? asciiText(x, r0, r1) : undefined, c);
      if (empty) {
        j = q + 2;
        continue;
      }
      const from = q + 4; // after >, <v>
      if (to - from > maxChars) throw tooLongAt(row);
      while (out.length < c - 1) out.push('');
      if (to === from) out[c - 1] = '';
      else if (t0 >= 0 && t1 === t0 + 1 && x[t0] === 0x73) {
        // t="s", the commonest cell: its index read in place
        const str = sharedStrings.get(numberAt(x, from, to));
        if (str === undefined) throw noSuchString(row, asciiText(x, from, to));
        out[c - 1] = str;
      } else {
        out[c - 1] = cellText(t0 >= 0 ? asciiText(x, t0, t1) : undefined, asciiText(x, from, to), s0 >= 0 ? numberAt(x, s0, s1) : 0, row);
      }
      j = to + 8;
    }
  };
  if (ctx.general !== true) {
    handlers.element = (x, lt) => {
      // Every read stays within the text: one past its end would throw the optimised code away (a deopt per place it happens).
      if (lt + 1 >= x.length) return -1;
      const end = scanPlainCell(x, lt, plain);
      if (end < 0) return -1;
      replayCell(plain);
      return end;
    };
    // Not inside a cell, a value or an inline string (the scanner then holds nothing either).
    handlers.bytes = plainRunShortcut(() => inside === 0, plainRow, MAX_HELD_ROW, '</row>');
  }
  yield* parseXml(file, part, (shortcut) => archive.text(part, shortcut), handlers, () => (rowNumber > 0 ? `after row ${rowNumber}` : ''));
}
