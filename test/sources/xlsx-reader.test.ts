import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { join } from 'node:path';
import { readdir, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import ExcelJS from 'exceljs';
import { sourceConfigSchema, type SourceConfigInput } from '../../src/sources/config.js';
import { ByteMeter } from '../../src/sources/meter.js';
import { SourceError } from '../../src/model/source-error.js';
import { readXlsxRows } from '../../src/sources/xlsx.js';
import { NEVER_FOLLOW, closeFile, openRegularFile } from '../../src/sources/open-file.js';
import { isDateFormat } from '../../src/sources/xlsx/styles.js';
import { handMadeXlsx, makeZip } from './xlsx-parts.js';
import { tempDir } from './helpers.js';

type Row = [line: number, cells: string[]];

async function save(book: Buffer): Promise<string> {
  const file = join(await tempDir(), 'book.xlsx');
  await writeFile(file, book);
  return file;
}

/** Every row the reader gives for a workbook file, as [sheet row number, cells]. */
async function rowsOf(file: string, source: Partial<SourceConfigInput> = {}, chunkBytes?: number): Promise<Row[]> {
  const src = sourceConfigSchema.parse({ type: 'xlsx', ...source });
  const rows: Row[] = [];
  const f = await openRegularFile(file, NEVER_FOLLOW);
  try {
    const input = { file, fd: f.fd, size: f.size };
    for await (const _ of readXlsxRows(input, src, new ByteMeter(file, src.limits.max_file_bytes), (cells, line) => rows.push([line, [...cells]]), chunkBytes)) void _;
  } finally {
    await closeFile(f.fd);
  }
  return rows;
}

async function refusal(file: string, source: Partial<SourceConfigInput> = {}): Promise<SourceError> {
  try {
    await rowsOf(file, source);
  } catch (err) {
    if (err instanceof SourceError) return err;
    throw err;
  }
  throw new Error('the workbook was read, not refused');
}

const STYLES = `<numFmts count="4">
  <numFmt numFmtId="164" formatCode="yyyy&quot;年&quot;m&quot;月&quot;d&quot;日&quot;"/>
  <numFmt numFmtId="165" formatCode="0.00E+00"/>
  <numFmt numFmtId="166" formatCode="[h]:mm:ss"/>
  <numFmt numFmtId="167" formatCode="#,##0&quot; pcs&quot;;[Red]\\-#,##0"/>
</numFmts>
<cellXfs count="7">
  <xf numFmtId="0"/><xf numFmtId="14"/><xf numFmtId="31"/><xf numFmtId="164"/><xf numFmtId="165"/><xf numFmtId="166"/><xf numFmtId="167"/>
</cellXfs>`;

describe('XLSX reader: cells as a CSV export of the sheet would hold them', () => {
  it('reads every kind of cell: strings, inline and rich text, formulas, booleans, errors, numbers and dates', async () => {
    const rows = `
      <row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="inlineStr"><is><t>Inline &amp; plain</t></is></c></row>
      <row r="2"><c r="A2" t="inlineStr"><is><r><t>rich </t></r><r><rPr><b/></rPr><t xml:space="preserve">text </t></r><r><t>runs</t></r></is></c>
        <c r="B2" t="str"><f>A1&amp;"!"</f><v>SKU!</v></c><c r="C2" t="b"><v>1</v></c><c r="D2" t="b"><f>1=2</f><v>0</v></c><c r="E2" t="e"><f>1/0</f><v>#DIV/0!</v></c></row>
      <row r="3"><c r="A3"><v>4901234567890</v></c><c r="B3"><v>1200.5</v></c><c r="C3"><v>-3</v></c><c r="D3"><v>1.5E-7</v></c><c r="E3" s="4"><v>12345.678</v></c><c r="F3" s="6"><v>-42</v></c></row>
      <row r="4"><c r="A4" s="1"><v>45356</v></c><c r="B4" s="2"><v>45356.5625</v></c><c r="C4" s="3"><f>A4+1</f><v>45357</v></c><c r="D4" s="5"><v>1.5</v></c><c r="E4" t="d"><v>2024-03-05T13:30:00</v></c></row>
      <row r="5"><c r="A5" t="s"><v>2</v></c><c r="C5" t="inlineStr"><is><t>after a gap</t></is></c><c r="E5" s="1"/><c r="F5"><v></v></c></row>
      <row><c><v>7</v></c><c t="inlineStr"><is><t>no references</t></is></c></row>
      <row r="9"><c r="B9" t="str"><v>line_x000D_
break, _x005F_x0041_ kept</v></c></row>`;
    const file = await save(handMadeXlsx({ sheets: [{ name: 'Stock', rows }], sharedStrings: ['SKU', '髙橋の㈱りんご', 'trailing  '], styles: STYLES }));
    expect(await rowsOf(file)).toEqual([
      [1, ['SKU', '髙橋の㈱りんご', 'Inline & plain']],
      [2, ['rich text runs', 'SKU!', 'TRUE', 'FALSE', '#DIV/0!']],
      [3, ['4901234567890', '1200.5', '-3', '1.5e-7', '12345.678', '-42']],
      // Serial 1.5 in an elapsed-time format reads as a date-time, as exceljs read it (Excel's 1900 counts a 29 February).
      [4, ['2024-03-05', '2024-03-05T13:30:00', '2024-03-06', '1899-12-31T12:00:00', '2024-03-05T13:30:00']],
      // E5 is styled but empty; F5 has an empty value, which holds its place as exceljs's did.
      [5, ['trailing  ', '', 'after a gap', '', '', '']],
      [6, ['7', 'no references']],
      [9, ['', 'line\r\nbreak, _x0041_ kept']],
    ]);
  });

  it('numbers rows without a reference after their first cell, and reads ISO dates as the time written', async () => {
    const rows = '<row><c r="A5" t="d"><v>2024-03-05T10:00:00+09:00</v></c></row><row><c r="A9" s="1"><v>45356</v></c></row><row><c t="d"><v>2024-03-06</v></c></row>';
    const styles = '<cellXfs count="2"><xf numFmtId="0"/><xf numFmtId="71"/></cellXfs>';
    const file = await save(handMadeXlsx({ sheets: [{ name: 'S', rows }], styles }));
    expect(await rowsOf(file)).toEqual([
      [5, ['2024-03-05T10:00:00']],
      [9, ['2024-03-05']], // 71 is a Thai built-in date format
      [10, ['2024-03-06']],
    ]);
  });

  it('counts dates from 1904 in a workbook that says so', async () => {
    const rows = '<row r="1"><c r="A1" s="1"><v>43894</v></c></row>';
    const file = await save(handMadeXlsx({ sheets: [{ name: 'S', rows }], styles: STYLES, date1904: true }));
    expect(await rowsOf(file)).toEqual([[1, ['2024-03-05']]]);
  });

  it('tells date formats from number formats', () => {
    for (const code of ['yyyy-mm-dd', 'm/d/yy h:mm', 'yyyy"年"m"月"d"日"', '[$-411]ggge"年"m"月"d"日"', '[h]:mm:ss', 'mm:ss', 'dd/mm/yyyy;@', 'B2yyyy/mm/dd']) expect(isDateFormat(code), code).toBe(true);
    for (const code of ['General', '0.00E+00', '#,##0" pcs";[Red]\\-#,##0', '0.0%', '"Day "0', '_-* #,##0_-;\\-* #,##0_-', '@', '[Red]0.00']) expect(isDateFormat(code), code).toBe(false);
  });

  it('leaves out the phonetic guide (furigana) of a Japanese name, in the strings table and inline', async () => {
    const sst = '<si><t>東京店</t><rPh sb="0" eb="2"><t>トウキョウ</t></rPh><phoneticPr fontId="1"/></si><si><r><t>髙島</t></r><r><t>屋</t></r><rPh sb="0" eb="3"><t>タカシマヤ</t></rPh></si>';
    const rows = '<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="inlineStr"><is><t>大阪</t><rPh sb="0" eb="2"><t>オオサカ</t></rPh></is></c></row>';
    const file = await save(handMadeXlsx({ sheets: [{ name: 'S', rows }], sharedStrings: sst }));
    expect(await rowsOf(file)).toEqual([[1, ['東京店', '髙島屋', '大阪']]]);
  });

  it('reads a workbook whose writer prefixes every element (x:c, x:v)', async () => {
    const rows = '<x:row r="1"><x:c r="A1" t="s"><x:v>0</x:v></x:c><x:c r="B1"><x:v>5</x:v></x:c></x:row>';
    const file = await save(handMadeXlsx({ sheets: [{ name: 'S', rows }], sharedStrings: ['SKU'], prefix: 'x' }));
    expect(await rowsOf(file)).toEqual([[1, ['SKU', '5']]]);
  });

  it('takes no element of another namespace for its own: a 1904 workbook stays 1904 beside x15:workbookPr', async () => {
    const zip = makeZip([
      {
        name: 'xl/workbook.xml',
        data: Buffer.from(
          '<x:workbook xmlns:x="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:x15="http://schemas.microsoft.com/office/spreadsheetml/2010/11/main">' +
            '<x:workbookPr date1904="1"/><x:sheets><x:sheet name="S" sheetId="1"/></x:sheets>' +
            '<x:extLst><x:ext uri="{140A7094-0E35-4892-8432-C4D2E57EDEB5}"><x15:workbookPr chartTrackingRefBase="1"/></x:ext></x:extLst></x:workbook>',
        ),
      },
      { name: 'xl/styles.xml', data: Buffer.from('<x:styleSheet xmlns:x="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><x:cellXfs><x:xf numFmtId="0"/><x:xf numFmtId="14"/></x:cellXfs></x:styleSheet>') },
      { name: 'xl/worksheets/sheet1.xml', data: Buffer.from('<x:worksheet xmlns:x="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><x:sheetData><x:row r="1"><x:c r="A1" s="1"><x:v>43894</x:v></x:c></x:row></x:sheetData></x:worksheet>') },
    ]);
    expect(await rowsOf(await save(zip))).toEqual([[1, ['2024-03-05']]]);
  });

  it('finds a workbook at the root of the archive, and sheet files named with percent escapes', async () => {
    const ns = 'http://schemas.openxmlformats.org/spreadsheetml/2006/main';
    const rel = 'http://schemas.openxmlformats.org/officeDocument/2006/relationships';
    const zip = makeZip([
      { name: '_rels/.rels', data: Buffer.from(`<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="r" Type="${rel}/officeDocument" Target="workbook.xml"/></Relationships>`) },
      { name: 'workbook.xml', data: Buffer.from(`<workbook xmlns="${ns}" xmlns:r="${rel}"><sheets><sheet name="S" sheetId="1" r:id="s1"/></sheets></workbook>`) },
      { name: '_rels/workbook.xml.rels', data: Buffer.from(`<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="s1" Type="${rel}/worksheet" Target="sheets/Sheet%201.xml"/></Relationships>`) },
      { name: 'sheets/Sheet 1.xml', data: Buffer.from(`<worksheet xmlns="${ns}"><sheetData><row r="1"><c r="A1"><v>3</v></c></row></sheetData></worksheet>`) },
    ]);
    expect(await rowsOf(await save(zip))).toEqual([[1, ['3']]]);
  });

  it('skips the preamble rows the source says to skip, by sheet row number', async () => {
    const rows = '<row r="1"><c r="A1" t="inlineStr"><is><t>Export v2</t></is></c></row><row r="3"><c r="A3"><v>1</v></c></row>';
    const file = await save(handMadeXlsx({ sheets: [{ name: 'S', rows }] }));
    expect(await rowsOf(file, { header: { skip_lines: 1 } })).toEqual([[3, ['1']]]);
  });
});

describe('XLSX reader: which sheet', () => {
  const book = () =>
    handMadeXlsx({
      sheets: [
        { name: 'Chart', kind: 'chartsheet', xml: '<chartsheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"/>' },
        { name: 'Cover', rows: '<row r="1"><c r="A1" t="inlineStr"><is><t>cover</t></is></c></row>' },
        { name: 'Stock', rows: '<row r="1"><c r="A1" t="inlineStr"><is><t>stock</t></is></c></row>' },
      ],
    });

  it('by name, by tab position, or the first worksheet', async () => {
    const file = await save(book());
    expect(await rowsOf(file, { sheet: 'Stock' })).toEqual([[1, ['stock']]]);
    expect(await rowsOf(file, { sheet: 3 })).toEqual([[1, ['stock']]]);
    expect(await rowsOf(file, { sheet: null })).toEqual([[1, ['cover']]]);
  });

  it('refuses a chart sheet and a missing sheet, naming the sheets there are', async () => {
    const file = await save(book());
    const chart = await refusal(file, { sheet: 1 });
    expect(chart.code).toBe('SHEET_NOT_FOUND');
    expect(chart.message).toContain('"Chart" is a chart sheet');
    const missing = await refusal(file, { sheet: 'Lager' });
    expect(missing.code).toBe('SHEET_NOT_FOUND');
    expect(missing.message).toContain('sheets are: "Chart", "Cover", "Stock"');
    expect(missing.context.setting).toBe('sheet');
  });
});

describe('XLSX reader: characters split between inflated pieces', () => {
  // Characters of one, two, three and four UTF-8 bytes, and XML's own specials.
  const CHARS = [...'aZ09 -<>&"\'髙①㈱テスト表示ソ能ｶﾅé한😀'];
  const xml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

  it('gives the same cells whatever the piece size, in the strings table and in inline strings', async () => {
    const dir = await tempDir();
    let n = 0;
    const text = fc.array(fc.constantFrom(...CHARS), { minLength: 1, maxLength: 20 }).map((a) => a.join(''));
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(text, text), { minLength: 1, maxLength: 30 }), fc.integer({ min: 64, max: 400 }), async (pairs, piece) => {
        const rows = pairs.map(([shared, inline], i) => `<row r="${i + 1}"><c r="A${i + 1}" t="s"><v>${i}</v></c><c r="B${i + 1}" t="inlineStr"><is><t>${xml(inline)}</t></is></c></row>`).join('');
        const file = join(dir, `b${n++}.xlsx`);
        await writeFile(file, handMadeXlsx({ sheets: [{ name: 'S', rows }], sharedStrings: pairs.map(([shared]) => xml(shared)) }));
        expect(await rowsOf(file, {}, piece)).toEqual(pairs.map(([shared, inline], i) => [i + 1, [shared, inline]]));
      }),
      { numRuns: 40 },
    );
  });

  it('takes ASCII pieces as they are, yet drops a byte order mark only at the start of a part and refuses bad UTF-8 after them', async () => {
    // Pieces of plain ASCII skip the decoder (issue 18); where the decoder first comes in is no start of the part.
    const dir = await tempDir();
    const ascii = Array.from({ length: 6 }, (_, i) => `<row r="${i + 1}"><c r="A${i + 1}" t="s"><v>0</v></c></row>`).join('');
    const bom = '\ufeff';
    const rows = `${ascii}<row r="7"><c r="A7" t="inlineStr"><is><t>${bom}a${bom}髙${bom}</t></is></c><c r="B7" t="s"><v>1</v></c></row>`;
    const file = join(dir, 'bom.xlsx');
    const entries = handMadeXlsx({ sheets: [{ name: 'S', xml: `${bom}<?xml version="1.0" encoding="UTF-8"?><worksheet><sheetData>${rows}</sheetData></worksheet>` }], sharedStrings: ['plain', `${bom}x`] });
    await writeFile(file, entries);
    const expected = [...Array.from({ length: 6 }, (_, i): Row => [i + 1, ['plain']]), [7, [`${bom}a${bom}髙${bom}`, `${bom}x`]] as Row];
    for (let piece = 64; piece <= 420; piece++) expect(await rowsOf(file, {}, piece)).toEqual(expected);
    const bad = join(dir, 'bad.xlsx');
    const body = Buffer.concat([Buffer.from(`<worksheet><sheetData>${ascii.replaceAll(' t="s"', '')}<row r="7"><c r="A7" t="inlineStr"><is><t>`), Buffer.from([0xe9, 0x61]), Buffer.from('</t></is></c></row></sheetData></worksheet>')]);
    await writeFile(bad, makeZip([{ name: 'xl/workbook.xml', data: Buffer.from('<workbook><sheets><sheet name="S" sheetId="1"/></sheets></workbook>') }, { name: 'xl/worksheets/sheet1.xml', data: body }]));
    for (let piece = 64; piece <= 420; piece += 7) {
      const err = await rowsOf(bad, {}, piece).then(() => null, (e: unknown) => e);
      expect(err).toBeInstanceOf(SourceError);
      expect([(err as SourceError).code, (err as SourceError).message]).toEqual(['BAD_ENCODING', expect.stringContaining('sheet1.xml is not valid utf-8')]);
    }
  });

  it('keeps 20,000 distinct Japanese names whole in a workbook exceljs wrote', async () => {
    // exceljs's own streaming reader turns a few of these into U+FFFD (its issues #2063, #2084).
    const names = (i: number) => `髙島屋の商品 ${i} 番 ①㈱`;
    for (const useSharedStrings of [true, false]) {
      const file = join(await tempDir(), 'jp.xlsx');
      const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: file, useSharedStrings });
      const ws = wb.addWorksheet('在庫');
      for (let i = 1; i <= 20_000; i++) ws.addRow([`SKU-${i}`, names(i)]).commit();
      ws.commit();
      await wb.commit();
      const rows = await rowsOf(file);
      expect(rows).toHaveLength(20_000);
      const wrong = rows.filter(([line, cells]) => cells[1] !== names(line));
      expect(wrong.slice(0, 3)).toEqual([]);
    }
  });
});

describe('XLSX reader: agrees with exceljs where exceljs reads right', () => {
  /** exceljs's cell values as text, as our reader turned them before it had its own (the reference). */
  function exceljsText(v: unknown): string {
    if (v === null || v === undefined) return '';
    if (typeof v === 'string') return v;
    if (typeof v === 'number') return Number.isFinite(v) ? String(v) : '';
    if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE';
    if (v instanceof Date) {
      const t = new Date(Math.round(v.getTime() / 1000) * 1000);
      if (Number.isNaN(t.getTime())) return '';
      const pad = (n: number) => String(n).padStart(2, '0');
      const day = `${t.getUTCFullYear()}-${pad(t.getUTCMonth() + 1)}-${pad(t.getUTCDate())}`;
      if (t.getUTCHours() === 0 && t.getUTCMinutes() === 0 && t.getUTCSeconds() === 0) return day;
      return `${day}T${pad(t.getUTCHours())}:${pad(t.getUTCMinutes())}:${pad(t.getUTCSeconds())}`;
    }
    const o = v as { richText?: Array<{ text: string }>; result?: unknown };
    if (o.richText) return o.richText.map((r) => r.text).join('');
    if ('result' in o) return exceljsText(o.result);
    return '';
  }

  // Left out, because exceljs reads them wrong: '&' in inline strings (it decodes them twice), characters beyond
  // ASCII (its chunk bug), empty shared strings (it gives null), a formula whose result is 0 (it drops the
  // result), formulas in date-formatted cells (it gives their serial), dates within a second of 1970-01-01 (it gives
  // their serial, 25568.99999971065, as a number).
  const ascii = fc.array(fc.constantFrom(...'aZ09 -<>"\'/,.'), { minLength: 1, maxLength: 12 }).map((a) => a.join(''));
  const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null, freq: 4 });
  const row = fc.tuple(
    maybe(ascii),
    maybe(fc.date({ min: new Date(Date.UTC(1900, 2, 1)), max: new Date(Date.UTC(2100, 0, 1)), noInvalidDate: true }).filter((d) => Math.abs(d.getTime()) >= 1000)), // date-formatted column
    maybe(fc.oneof(fc.integer({ min: -1e9, max: 1e9 }), fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e12, max: 1e12 }))),
    maybe(fc.integer({ min: 1, max: 1000 }).map((n) => ({ formula: `${n}*2`, result: n * 2 }))),
    maybe(fc.boolean()),
    maybe(fc.oneof(ascii, fc.integer())),
  );

  for (const mode of ['shared strings', 'inline strings'] as const) {
    it(`${mode}: the same rows from the same workbook`, async () => {
      const dir = await tempDir();
      let n = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(row, { minLength: 1, maxLength: 12 }), async (table) => {
          const file = join(dir, `e${n++}.xlsx`);
          const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: file, useSharedStrings: mode === 'shared strings', useStyles: true });
          const ws = wb.addWorksheet('S');
          ws.getColumn(2).numFmt = 'yyyy-mm-dd hh:mm:ss';
          for (const r of table) ws.addRow(r).commit();
          ws.commit();
          await wb.commit();
          const reference: Row[] = [];
          for await (const sheet of new ExcelJS.stream.xlsx.WorkbookReader(file, { sharedStrings: 'cache', styles: 'cache', hyperlinks: 'ignore', worksheets: 'emit', entries: 'ignore' })) {
            for await (const row of sheet as AsyncIterable<ExcelJS.Row>) {
              const values = row.values as unknown[];
              reference.push([row.number, Array.from({ length: Math.max(values.length - 1, 0) }, (_, i) => exceljsText(values[i + 1]))]);
            }
          }
          expect(await rowsOf(file)).toEqual(reference);
        }),
        { numRuns: 15 },
      );
    });
  }
});

describe('XLSX reader: damaged and hostile workbooks', () => {
  it('refuses an entry that inflates beyond the size its directory declares', async () => {
    const rows = `<row r="1"><c r="A1" t="inlineStr"><is><t>${'x'.repeat(5000)}</t></is></c></row>`;
    const honest = handMadeXlsx({ sheets: [{ name: 'S', rows }] });
    expect(await rowsOf(await save(honest))).toHaveLength(1);
    const sheetXml = `<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>${rows}</sheetData></worksheet>`;
    const liar = makeZip([
      { name: '_rels/.rels', data: Buffer.from('<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"/>') },
      { name: 'xl/workbook.xml', data: Buffer.from('<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets><sheet name="S" sheetId="1"/></sheets></workbook>') },
      { name: 'xl/worksheets/sheet1.xml', data: Buffer.from(sheetXml), declaredBytes: 300 },
    ]);
    const err = await refusal(await save(liar));
    expect(err.code).toBe('ZIP_BOMB');
    expect(err.message).toContain('xl/worksheets/sheet1.xml inflates to more than the 300 bytes');
    expect(err.context.setting).toBe('type'); // no limit would let it through
  });

  it('reads stored (uncompressed) entries too', async () => {
    const sheetXml = '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1"><v>1</v></c></row></sheetData></worksheet>';
    const zip = makeZip([
      { name: 'xl/workbook.xml', data: Buffer.from('<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets><sheet name="S" sheetId="1"/></sheets></workbook>'), method: 0 },
      { name: 'xl/worksheets/sheet1.xml', data: Buffer.from(sheetXml), method: 0 },
    ]);
    expect(await rowsOf(await save(zip))).toEqual([[1, ['1']]]);
  });

  it('refuses invalid UTF-8, XML that is not well-formed, and a string index beyond the table, naming the part or row', async () => {
    const sheet = (body: Buffer) =>
      makeZip([
        { name: 'xl/workbook.xml', data: Buffer.from('<workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheets><sheet name="S" sheetId="1"/></sheets></workbook>') },
        { name: 'xl/worksheets/sheet1.xml', data: body },
      ]);
    const head = '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData><row r="1"><c r="A1" t="inlineStr"><is><t>';
    const tail = '</t></is></c></row></sheetData></worksheet>';
    const encoding = await refusal(await save(sheet(Buffer.concat([Buffer.from(head), Buffer.from([0x83, 0x65, 0x83, 0x58]), Buffer.from(tail)]))));
    expect(encoding.code).toBe('BAD_ENCODING');
    expect(encoding.message).toContain('xl/worksheets/sheet1.xml is not valid utf-8');
    const malformed = await refusal(await save(sheet(Buffer.from(`${head}oops</c></row></sheetData></worksheet>`))));
    expect(malformed.code).toBe('WRONG_FORMAT');
    expect(malformed.message).toContain('xl/worksheets/sheet1.xml is not well-formed XML after row 1');
    const index = await refusal(await save(handMadeXlsx({ sheets: [{ name: 'S', rows: '<row r="4"><c r="A4" t="s"><v>7</v></c></row>' }], sharedStrings: ['only one'] })));
    expect(index.code).toBe('WRONG_FORMAT');
    expect(index.message).toContain('row 4: refers to shared string 7, but the workbook has 1');
    expect(index.context.line).toBe(4);
  });

  it('refuses a cell beyond column XFD before it allocates anything', async () => {
    const file = await save(handMadeXlsx({ sheets: [{ name: 'S', rows: '<row r="3"><c r="ZZZZZZZ3"><v>1</v></c></row>' }] }));
    const err = await refusal(file);
    expect(err.code).toBe('WRONG_FORMAT');
    expect(err.message).toContain('row 3: cell ZZZZZZZ3 is beyond column XFD (16384)');
    expect(err.context.line).toBe(3);
    expect(await rowsOf(await save(handMadeXlsx({ sheets: [{ name: 'S', rows: '<row r="1"><c r="XFD1"><v>1</v></c></row>' }] })))).toEqual([[1, [...Array(16_383).fill(''), '1']]]);
  });

  it('refuses an archive of more entries than any workbook has, and elements nested deeper than any writer nests them', async () => {
    const many = makeZip(Array.from({ length: 10_001 }, (_, i) => ({ name: `e${i}`, data: Buffer.alloc(0), method: 0 as const })));
    const entries = await refusal(await save(many));
    expect(entries.code).toBe('WRONG_FORMAT');
    expect(entries.message).toContain('10001 entries, more than the 10000');
    const deep = handMadeXlsx({ sheets: [{ name: 'S', rows: `<row r="1">${'<x>'.repeat(100)}${'</x>'.repeat(100)}</row>` }] });
    const nested = await refusal(await save(deep));
    expect(nested.code).toBe('WRONG_FORMAT');
    expect(nested.message).toContain('xl/worksheets/sheet1.xml nests elements deeper than any workbook writer does');
  });

  it('refuses a shared strings table beyond its limit, and a cell beyond max_record_bytes as it grows', async () => {
    const file = await save(handMadeXlsx({ sheets: [{ name: 'S', rows: '<row r="2"><c r="A2" t="s"><v>0</v></c></row>' }], sharedStrings: ['x'.repeat(5000)] }));
    const table = await refusal(file, { limits: { max_shared_strings_bytes: 4096 } });
    expect(table.code).toBe('LIMIT_SHARED_STRINGS');
    expect(table.message).toContain('raise limits.max_shared_strings_bytes');
    const long = await save(handMadeXlsx({ sheets: [{ name: 'S', rows: `<row r="7"><c r="A7" t="inlineStr"><is><t>${'y'.repeat(5000)}</t></is></c></row>` }] }));
    const cell = await refusal(long, { limits: { max_record_bytes: 1000 } });
    expect(cell.code).toBe('LIMIT_RECORD_BYTES');
    expect(cell.context.line).toBe(7);
    expect(cell.message).toContain('raise limits.max_record_bytes');
  });

  it('refuses a password-protected workbook (an OLE container) with what to do', async () => {
    const ole = Buffer.concat([Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]), Buffer.alloc(504)]);
    const err = await refusal(await save(ole));
    expect(err.code).toBe('WRONG_FORMAT');
    expect(err.message).toContain('password-protected workbook');
    expect(err.message).toContain('save it as .xlsx without a password');
  });
});

describe('XLSX reader: a read stopped early', () => {
  it.skipIf(process.platform !== 'linux')('releases the file it had open, each time', async () => {
    // Text that does not compress, so that most of the sheet is still unread when the read stops at row 10.
    const rows = Array.from({ length: 4000 }, (_, i) => `<row r="${i + 1}"><c r="A${i + 1}" t="inlineStr"><is><t>${randomBytes(i === 9 ? 3000 : 200).toString('hex')}</t></is></c></row>`).join('');
    const file = await save(handMadeXlsx({ sheets: [{ name: 'S', rows }] }));
    const open = async () => (await readdir('/proc/self/fd')).length;
    const before = await open();
    for (let i = 0; i < 20; i++) {
      const err = await refusal(file, { limits: { max_record_bytes: 1000 } }).catch((e: unknown) => e);
      expect((err as SourceError).code).toBe('LIMIT_RECORD_BYTES');
    }
    expect(await open()).toBeLessThanOrEqual(before);
  });
});
