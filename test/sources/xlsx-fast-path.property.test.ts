import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import ExcelJS from 'exceljs';
import { SourceError } from '../../src/model/source-error.js';
import { NEVER_FOLLOW, closeFile, openRegularFile } from '../../src/sources/open-file.js';
import { WorkbookArchive } from '../../src/sources/xlsx/archive.js';
import { ListedStrings, readSharedStrings, type StringTable } from '../../src/sources/xlsx/shared-strings.js';
import { readSheetRows } from '../../src/sources/xlsx/sheet.js';
import { handMadeEntries, handMadeXlsx, makeZip } from './xlsx-parts.js';
import { tempDir } from './helpers.js';

/**
 * Issue 18: plain cells (`<c r t s><v>…</v></c>`, `<c …/>`) and plain shared
 * strings (`<si><t>…</t></si>`) are read by a fast path (plain-cell.ts) that
 * leaves everything else to the general scanner. It must give exactly what
 * the general path gives, cell for cell and refusal for refusal, whatever
 * the sheet holds and wherever the inflated pieces are cut: checked here on
 * generated sheets of every kind of cell, on the strings tables beside them,
 * and on workbooks exceljs writes. Plain rows are read off the part's bytes
 * before they are decoded (ByteShortcut, archive.ts), handing back to the
 * scanner at any row they cannot read and taking over again after it: long
 * sheets of plain rows with others among them, and what may stand between
 * rows, check those hand-overs.
 */

/** Stands for a byte that is not UTF-8 (0xFF) in the parts bookWithBytes writes. */
const BAD_UTF8 = '\u00a4';

/** A workbook of one sheet part `xml` and a strings table, with each BAD_UTF8 in either written as the byte 0xFF. */
function bookWithBytes(xml: string, sharedStrings: string): Buffer {
  const entries = handMadeEntries({ sheets: [{ name: 'S', xml }], sharedStrings });
  for (const e of entries) {
    if (e.name === 'xl/worksheets/sheet1.xml' || e.name === 'xl/sharedStrings.xml') {
      e.data = Buffer.from(e.data.toString().split(BAD_UTF8).map((part) => Buffer.from(part).toString('latin1')).join('\xff'), 'latin1');
    }
  }
  return makeZip(entries);
}

/** Every item of a strings table, in order. */
function items(table: StringTable): string[] {
  return Array.from({ length: table.length }, (_, i) => table.get(i)!);
}

/** A refusal keeps the rows handed on before it: they must be the same too. */
type Outcome = { rows: Array<[number, string[]]>; strings: string[] } | { refused: string; rows: Array<[number, string[]]> };

/** The strings table and the rows of sheet 1, by the fast path or (`general`) without it. */
async function read(file: string, general: boolean, piece: number, maxChars = 1_000): Promise<Outcome> {
  const f = await openRegularFile(file, NEVER_FOLLOW);
  const archive = await WorkbookArchive.open(file, f.fd, f.size, piece);
  const rows: Array<[number, string[]]> = [];
  try {
    const table = archive.has('xl/sharedStrings.xml') ? await readSharedStrings(archive, 'xl/sharedStrings.xml', 1 << 20, general) : new ListedStrings([]);
    const ctx = { sharedStrings: table, dateStyles: [false, true, false], date1904: false, maxChars, general };
    for await (const _ of readSheetRows(archive, 'xl/worksheets/sheet1.xml', ctx, (cells, row) => rows.push([row, [...cells]]))) void _;
    return { rows, strings: items(table) };
  } catch (err) {
    if (err instanceof SourceError) return { refused: `${err.code} ${err.message}`, rows };
    throw err;
  } finally {
    archive.close();
    await closeFile(f.fd);
  }
}

// Text of every sort: plain, non-ASCII, and what the fast path must leave to the scanner
// (references, CR, tab, LF, >, an OOXML escape, characters XML refuses).
const TEXT = fc
  .array(fc.constantFrom('1', '0', '-', '.', 'E', 'a', ' ', '髙', '😀', 'é', '&amp;', '&lt;', '&#65;', '>', '\r\n', '\t', '\n', '_x000D_', '\u0001', '\ufffe', '"', "'"), {
    maxLength: 6,
  })
  .map((p) => p.join(''));
const NUMBER = fc.oneof(fc.integer({ min: -1e6, max: 1e6 }).map(String), fc.double({ noNaN: true }).map(String), fc.constantFrom('1e5', '0.10', '-0', '', ' 3', '007', 'x'));
const REF = fc.oneof(
  fc.tuple(fc.constantFrom('A', 'B', 'C', 'Z', 'AA', 'XFD', 'XFE', 'b', ''), fc.constantFrom('1', '2', '5', '', '0')).map(([c, r]) => c + r),
  fc.constantFrom('A1 ', '$A$1', '1A'),
);
const ATTR = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(fc.constant('r'), REF) },
  { weight: 3, arbitrary: fc.tuple(fc.constant('t'), fc.constantFrom('s', 'n', 'b', 'e', 'str', 'd', 'inlineStr', 'x', '')) },
  { weight: 3, arbitrary: fc.tuple(fc.constant('s'), fc.constantFrom('0', '1', '2', '9', '', 'x')) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('cm', 'vm', 'ph', 'x14ac:dyDescent'), fc.constantFrom('1', '0')) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('r', 's'), fc.constantFrom('A&amp;1', 'A\t1', '髙', '1\n')) },
);
const SPACE = fc.constantFrom(' ', ' ', ' ', '  ', '\n', '\t');
const attrs = fc.array(fc.tuple(SPACE, ATTR, fc.constantFrom('"', '"', '"', "'")), { maxLength: 4 }).map((a) => a.map(([sp, [k, v], q]) => `${sp}${k}=${q}${v}${q}`).join(''));
const VALUE = fc.oneof(NUMBER, TEXT, fc.nat(12).map(String), fc.constantFrom('TRUE', '0', '#N/A', '2024-03-01T10:20:30Z', '45000.5'));
const CELL = fc.oneof(
  { weight: 8, arbitrary: fc.tuple(attrs, VALUE).map(([a, v]) => `<c${a}><v>${v}</v></c>`) },
  { weight: 2, arbitrary: attrs.map((a) => `<c${a}/>`) },
  { weight: 1, arbitrary: attrs.map((a) => `<c${a}></c>`) },
  { weight: 1, arbitrary: fc.tuple(attrs, VALUE).map(([a, v]) => `<c${a}><f>A1+1</f><v>${v}</v></c>`) },
  { weight: 1, arbitrary: fc.tuple(attrs, TEXT).map(([a, t]) => `<c${a} t="inlineStr"><is><t>${t}</t></is></c>`) },
  { weight: 1, arbitrary: fc.tuple(attrs, TEXT, TEXT).map(([a, t, u]) => `<c${a}><is><r><t>${t}</t></r><r><rPr/><t xml:space="preserve">${u}</t></r><rPh><t>ふり</t></rPh></is></c>`) },
  { weight: 1, arbitrary: fc.tuple(attrs, VALUE).map(([a, v]) => `<c${a}><v>${v}</v ></c>`) },
  { weight: 1, arbitrary: fc.tuple(attrs, VALUE).map(([a, v]) => `<c${a}><v><![CDATA[${v}]]></v></c>`) },
  { weight: 1, arbitrary: fc.tuple(attrs, VALUE).map(([a, v]) => `<c${a}><v>${v}</v></c >`) },
  // A row inside a cell, a value or an inline string: what the scanner's events leave is what the whole-row fast path must leave.
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      '<c r="B1" t="s"><row r="7"><c r="A7"><v>1</v></c></row></c>',
      '<c r="B1" t="s"><row r="7"><c r="A7"><v>1</v></c></row><v>0</v></c>',
      '<c r="C1" s="1"><v>2</v><row><c r="D5" t="s"><v>0</v></c></row></c>',
      '<c r="C1" t="inlineStr"><is><row r="8"><c><v>3</v></c></row><t>x</t></is></c>',
      '<c t="str"><v>a<row r="9"><c r="B9"><v>4</v></c></row></v></c>',
      '<c r="E1"><c r="F1"><v>5</v></c><row r="3"><c r="A3" t="s"><v>1</v></c></row></c>',
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom('<c r="A1"><v>1</v>', '<c r="A1"><v>1</c></v>', '<c r="A1" r="B1"><v>1</v></c>', '<c r="A1"><v>1</v></c></c>', '<c r="A1"><v>1</v></d>', '<!-- c -->', 'x') },
);
// Row attributes as writers give them, and what the row fast path must leave to the scanner (or the scanner refuses).
const ROW_ATTR = fc.oneof(
  { weight: 4, arbitrary: fc.nat(9).map((n) => ` r="${n + 1}"`) },
  { weight: 2, arbitrary: fc.constantFrom(' spans="1:8"', ' x14ac:dyDescent="0.25"', ' ht="15"', ' customHeight="1"', ' r=""', ' r="x"', ' r="1e1"') },
  {
    weight: 1,
    arbitrary: fc.constantFrom(" r='3'", ' r = "3"', ' r="&#51;"', ' r="3\t"', '\nr="3"', ' 1r="3"', ' a:="1"', ' :a="1"', ' a:b:c="1"', ' r="3" r="4"', ' spans="1:2" spans="1:2"', ' r', ' r="<"', ' x="髙"', '/'),
  },
);
const ROW = fc
  .tuple(fc.array(ROW_ATTR, { maxLength: 4 }), fc.array(CELL, { maxLength: 8 }), fc.constantFrom('</row>', '</row>', '</row>', '</row >', ' </row>', '</rows>'))
  .map(([a, cells, end]) => `<row${a.join('')}>${cells.join('')}${end}`);
const ITEM = fc.oneof(
  { weight: 6, arbitrary: TEXT.map((t) => `<si><t>${t}</t></si>`) },
  { weight: 2, arbitrary: TEXT.map((t) => `<si><t xml:space="preserve">${t}</t></si>`) },
  { weight: 1, arbitrary: fc.constantFrom('<si><t/></si>', '<si><t></t></si>', '<si></si>', '<si><t xml:space="default">a</t></si>', '<si><t >a</t></si>', '<si ><t>a</t></si>', '<si><t>a</t ></si>') },
  { weight: 1, arbitrary: fc.tuple(TEXT, TEXT).map(([t, u]) => `<si><r><t>${t}</t></r><r><t>${u}</t></r><rPh sb="0" eb="1"><t>よみ</t></rPh></si>`) },
  { weight: 1, arbitrary: fc.constantFrom('<si><t>a</t>', '<si><t>a</si></t>', '<si><t>a</t></si></si>') },
);

// What may stand between rows, where the byte path takes over from the scanner and back: whitespace it skips, and
// what it leaves to the scanner (a comment or CDATA holding `</row>`, text, references, characters XML refuses, bad UTF-8).
// A cell outside any row takes its row from what the row before left.
// Things the scanner refuses are rare, so that most sheets are read to their end.
const BETWEEN = fc.oneof(
  { weight: 60, arbitrary: fc.constantFrom('', '', '', '', '', '', '\n', '\r\n', ' \t', '<!-- c -->', '<!-- </row> -->', '<![CDATA[</row><row>]]>', 'x', '&amp;', '髙', '<c r="C5" t="s"><v>1</v></c>', '<c><v>2</v></c>') },
  { weight: 1, arbitrary: fc.constantFrom('&bogus;', '\u0001', BAD_UTF8, '</row>', '<row>') },
);
// A plain row as writers give it (what the byte path takes), cells in or out of order, with and without references.
const PLAIN_REF = fc.option(fc.tuple(fc.constantFrom('A', 'B', 'C', 'AA', 'b'), fc.integer({ min: 1, max: 7 })).map(([c, r]) => ` r="${c}${r}"`), { nil: '' });
const PLAIN_CELL = fc.oneof(
  fc.tuple(PLAIN_REF, fc.nat(14)).map(([r, i]) => `<c${r} t="s"><v>${i}</v></c>`),
  fc.tuple(fc.constantFrom('', ' r="D9"', ' r="E9"'), fc.constantFrom('', ' s="1"', ' s="0"', ' s="2"'), NUMBER).map(([r, st, v]) => `<c${r}${st}><v>${v}</v></c>`),
  fc.tuple(fc.constantFrom(' t="b"', ' t="e"', ' t="str"', ' t="n"', ' t="d"', ' t="inlineStr"'), fc.constantFrom('1', '0', '#N/A', 'a_x000D_b', '_xD800_', 'a b', '2024-03-01')).map(([t, v]) => `<c r="F9"${t}><v>${v}</v></c>`),
  fc.constantFrom('<c r="G9"/>', '<c r="H9" s="1"/>', '<c/>', '<c r="I9" t="s"><v></v></c>'),
);
const PLAIN_ROW = fc
  .tuple(fc.option(fc.integer({ min: 1, max: 7 }), { nil: null }), fc.constantFrom('', ' spans="1:8"', ' spans="1:8" x14ac:dyDescent="0.25"'), fc.array(PLAIN_CELL, { maxLength: 9 }))
  .map(([r, a, cells]) => `<row${r === null ? '' : ` r="${r}"`}${a}>${cells.join('')}</row>`);

describe('XLSX fast path: the same cells and strings as the general scanner', () => {
  it('on long sheets and strings tables, plain with others among them and anything between, however the pieces are cut or the part ends', async () => {
    const dir = await tempDir();
    let n = 0;
    const rowOrOther = fc.oneof({ weight: 30, arbitrary: PLAIN_ROW }, { weight: 1, arbitrary: ROW });
    const sheet = fc.array(fc.tuple(BETWEEN, rowOrOther), { maxLength: 120 }).map((rs) => rs.map(([b, r]) => b + r).join(''));
    // Strings tables of plain items with others among them, in ASCII or not, and what may stand between items.
    const item = fc.oneof(
      { weight: 8, arbitrary: fc.tuple(fc.constantFrom('<si><t>', '<si><t xml:space="preserve">'), fc.constantFrom('s', 'SKU-1', '髙島屋 ①', 'a_x000D_b', '_xD800_', 'é', '😀', ' ', '', '\ufeff', '\ufffd'), fc.nat(99)).map(([t, u, i]) => `${t}${u}${i}</t></si>`) },
      { weight: 1, arbitrary: ITEM },
      { weight: 1, arbitrary: fc.constantFrom('<si><t>a\ufffe</t></si>', '<si><t>\uffffb</t></si>') },
    );
    const between = fc.oneof({ weight: 30, arbitrary: fc.constantFrom('', '', '', '\n', '<!-- </si> -->') }, { weight: 1, arbitrary: fc.constantFrom(BAD_UTF8, '\ufffe', '&bogus;', '</si>') });
    const table = fc.array(fc.tuple(between, item), { maxLength: 60 }).map((is) => is.map(([b, it]) => b + it).join(''));
    await fc.assert(
      fc.asyncProperty(sheet, table, fc.integer({ min: 16, max: 3_000 }), fc.boolean(), fc.option(fc.nat(), { freq: 4 }), fc.constantFrom(1_000, 8), async (rows, items, piece, bom, cut, maxChars) => {
        const file = join(dir, `l${n++}.xlsx`);
        let xml = `${bom ? '\ufeff' : ''}<?xml version="1.0"?><worksheet xmlns:x14ac="urn:ac"><sheetData>${rows}</sheetData></worksheet>`;
        // A part cut short (a damaged workbook): refused alike, after the same rows.
        if (cut !== null) xml = xml.slice(0, cut % (xml.length + 1));
        await writeFile(file, bookWithBytes(xml, items));
        expect(await read(file, false, piece, maxChars)).toEqual(await read(file, true, piece, maxChars));
      }),
      { numRuns: 300 },
    );
  });

  it('on plain values longer than a piece and than what is held back from one piece to the next', async () => {
    const dir = await tempDir();
    const row = (i: number, v: string) => `<row r="${i}"><c r="A${i}" t="s"><v>0</v></c><c r="B${i}" t="str"><v>${v}</v></c><c r="C${i}"><v>${i}</v></c></row>`;
    const values = ['ab'.repeat(20_000), 'c'.repeat(70_000), '1'.repeat(40_000), 'd'.repeat(200_000)];
    const file = join(dir, 'long.xlsx');
    await writeFile(file, bookWithBytes(`<worksheet><sheetData>${values.map((v, i) => row(i + 1, v)).join('')}</sheetData></worksheet>`, '<si><t>s</t></si>'));
    for (const piece of [64, 4_096, 65_536]) {
      const fast = await read(file, false, piece, 1 << 20);
      expect(fast).toEqual(await read(file, true, piece, 1 << 20));
      expect('rows' in fast && fast.rows.map(([, cells]) => cells[1])).toEqual(values);
    }
  });

  it('on generated sheets of every kind of cell and strings tables, however the inflated pieces are cut', async () => {
    const dir = await tempDir();
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(ROW, { maxLength: 6 }), fc.array(ITEM, { maxLength: 14 }), fc.integer({ min: 16, max: 600 }), fc.boolean(), fc.constantFrom(1_000, 8), async (rows, items, piece, prefixed, maxChars) => {
        const file = join(dir, `b${n++}.xlsx`);
        // A prefixed root (x:worksheet): unprefixed cells then go to the scanner as other elements would.
        const root = prefixed ? ['<x:worksheet xmlns:x="urn:x" xmlns="urn:d"><x:sheetData>', '</x:sheetData></x:worksheet>'] : ['<worksheet><sheetData>', '</sheetData></worksheet>'];
        await writeFile(file, handMadeXlsx({ sheets: [{ name: 'S', xml: `<?xml version="1.0"?>${root[0]}${rows.join('')}${root[1]}` }], sharedStrings: items.join('') }));
        const fast = await read(file, false, piece, maxChars);
        expect(fast).toEqual(await read(file, true, piece, maxChars));
      }),
      { numRuns: 300 },
    );
  });

  it('on a sheet of every kind of cell cut at every byte, and on strings longer than any piece', async () => {
    const dir = await tempDir();
    const long = 'ab髙'.repeat(30_000);
    const rows = [
      '<row r="1" spans="1:9" x14ac:dyDescent="0.25"><c r="A1" t="s"><v>0</v></c><c r="C1" t="s" s="1"><v>1</v></c><c r="D1"><v>2.50</v></c><c r="E1" s="1"><v>45000.5</v></c><c r="F1" t="b"><v>1</v></c><c r="G1" t="e"><v>#N/A</v></c><c r="H1"/><c r="I1" t="str"><v>a&amp;b</v></c></row>',
      '<row r="3"><c r="B3" t="inlineStr"><is><t>in&lt;line</t></is></c><c t="str"><v><![CDATA[x<y]]></v></c><c r="E3" t="s"><v>2</v></c><c r="F3"><f>A1</f><v>7</v></c><c r="G3" t="d"><v>2024-03-01T10:20:30Z</v></c></row>',
      '<row><c r="A4" t="s"><v>3</v></c><c r="B4" t="inlineStr"><is><r><t>ri</t></r><r><rPr><b/></rPr><t xml:space="preserve">ch </t></r></is></c></row>',
      `<row r="5"><c r="A5" t="str"><v>${long}</v></c><c r="B5" t="s"><v>4</v></c><c r="C5" t="inlineStr"><is><t>${long}</t></is></c></row>`,
    ];
    const strings = ['<si><t>plain</t></si>', '<si><r><t>rich </t></r><r><rPr><i/></rPr><t>text</t></r><rPh><t>よみ</t></rPh></si>', '<si><t xml:space="preserve"> sp&amp;ace </t></si>', '<si><t><![CDATA[c<d]]></t></si>', `<si><t>${long}</t></si>`];
    const book = (r: string[], st: string[]) =>
      handMadeXlsx({ sheets: [{ name: 'S', xml: `<?xml version="1.0"?><worksheet xmlns:x14ac="urn:ac"><sheetData>${r.join('')}</sheetData></worksheet>` }], sharedStrings: st.join('') });
    // Every cut of the small part: the first inflated piece ends at each byte in turn.
    const small = join(dir, 'small.xlsx');
    await writeFile(small, book(rows.slice(0, 3), strings.slice(0, 4)));
    const expected = {
      rows: [
        [1, ['plain', '', 'rich text', '2.5', '2023-03-15T12:00:00', 'TRUE', '#N/A', '', 'a&b']],
        [3, ['', 'in<line', 'x<y', '', ' sp&ace ', '7', '2024-03-01T10:20:30']],
        [4, ['c<d', 'rich ']],
      ],
      strings: ['plain', 'rich text', ' sp&ace ', 'c<d'],
    };
    expect(await read(small, false, 64, 1 << 20)).toEqual(expected);
    for (let piece = 64; piece <= 900; piece++) expect(await read(small, false, piece, 1 << 20)).toEqual(await read(small, true, piece, 1 << 20));
    // Strings several pieces long, in a value, an inline string and the strings table.
    const big = join(dir, 'big.xlsx');
    await writeFile(big, book(rows, strings));
    for (const piece of [64, 4_096, 65_536]) {
      const fast = await read(big, false, piece, 1 << 20);
      expect(fast).toEqual(await read(big, true, piece, 1 << 20));
      expect('rows' in fast && fast.rows[3]).toEqual([5, [long, long, long]]);
    }
  });

  it('on a row inside a cell, a value or an inline string, which the whole-row fast path leaves to the scanner', async () => {
    // The state a row leaves behind is what the enclosing cell's end then reads (its type, its column).
    const dir = await tempDir();
    const nested = [
      '<row r="1"><c r="B1" t="s"><row r="7"><c r="A7"><v>1</v></c></row><v>0</v></c></row>',
      '<row r="2"><c r="C2" t="inlineStr"><is><row r="8"><c r="D8" t="s"><v>0</v></c></row><t>x</t></is></c></row>',
      '<row r="3"><c r="E3"><c r="F3"><v>5</v></c><row r="9"><c r="A9" t="s"><v>1</v></c></row></c></row>',
      // A cell outside any row, after a row with neither a number nor cells: it numbers that row, and the next follows it.
      '<row r="2"><c r="A2"><v>1</v></c></row><row></row><c r="C5"><v>1</v></c><row><c><v>2</v></c></row>',
    ];
    let n = 0;
    for (const row of nested) {
      const file = join(dir, `n${n++}.xlsx`);
      await writeFile(file, handMadeXlsx({ sheets: [{ name: 'S', xml: `<worksheet><sheetData>${row}</sheetData></worksheet>` }], sharedStrings: '<si><t>S0</t></si><si><t>S1</t></si>' }));
      for (const piece of [64, 1_000]) expect(await read(file, false, piece)).toEqual(await read(file, true, piece));
    }
    expect(await read(join(dir, 'n0.xlsx'), false, 1_000)).toMatchObject({ rows: [[7, ['1']], [7, ['0']]] });
  });

  it('on workbooks exceljs writes: shared strings, inline strings, numbers, dates, formulas, rich text, booleans, errors', async () => {
    const dir = await tempDir();
    let n = 0;
    const cell = fc.oneof(
      fc.string({ maxLength: 8 }),
      fc.string({ unit: 'grapheme', maxLength: 5 }),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.integer(),
      fc.boolean(),
      fc.date({ min: new Date('1901-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }),
      fc.constant({ formula: 'A1*2', result: 7 }),
      fc.constant({ error: '#N/A' }),
      fc.constant({ richText: [{ text: 'ri' }, { font: { bold: true }, text: 'ch\r\n' }] }),
      fc.constant(null),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(cell, { maxLength: 6 }), { minLength: 1, maxLength: 12 }), fc.boolean(), fc.integer({ min: 64, max: 2_000 }), async (table, useSharedStrings, piece) => {
        const file = join(dir, `e${n++}.xlsx`);
        const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: file, useSharedStrings });
        const ws = wb.addWorksheet('S');
        for (const r of table) ws.addRow(r).commit();
        ws.commit();
        await wb.commit();
        expect(await read(file, false, piece)).toEqual(await read(file, true, piece));
      }),
      { numRuns: 25 },
    );
  });
});
