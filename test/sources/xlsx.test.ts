import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import ExcelJS from 'exceljs';
import { sourceConfigSchema, type SourceConfigInput } from '../../src/sources/config.js';
import { mappingConfigSchema, type MappingConfigInput } from '../../src/mapping/config.js';
import { readExportFile } from '../../src/sources/read.js';
import { tempDir } from './helpers.js';
import { makeZip } from './xlsx-parts.js';

const mapping: MappingConfigInput = {
  fields: {
    record_id: { column: 'SKU', transforms: ['fix_scientific'] },
    display_name: 'Name',
    api_value: 'Name',
    'attributes.price': { column: 'Price', transforms: ['number'] },
    'attributes.total': { column: 'Total', transforms: ['number'] },
    'attributes.arrived': 'Arrived',
    'attributes.note': 'Note',
    active: 'Active',
  },
};

async function read(file: string, source: Partial<SourceConfigInput> = {}, map: MappingConfigInput = mapping) {
  return readExportFile(file, sourceConfigSchema.parse({ type: 'xlsx', ...source }), mappingConfigSchema.parse(map));
}

async function buildWorkbook(dir: string, opts: { streaming?: boolean } = {}): Promise<string> {
  const file = join(dir, opts.streaming ? 'inline.xlsx' : 'shop.xlsx');
  const rows: unknown[][] = [
    ['SKU', 'Name', 'Price', 'Total', 'Arrived', 'Note', 'Active'],
    [4901234567890, '髙橋の㈱りんご', 1200.5, { formula: 'C2*2', result: 2401 }, new Date(Date.UTC(2024, 2, 5)), { richText: [{ text: 'rich ' }, { text: 'text' }] }, true],
    ['B-2', 'Banana', 80, { formula: 'C3*2', result: 160 }, new Date(Date.UTC(2024, 2, 5, 13, 30, 0)), null, false],
  ];
  if (opts.streaming) {
    const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: file, useSharedStrings: false, useStyles: true });
    const ws = wb.addWorksheet('Stock');
    ws.getColumn(5).numFmt = 'yyyy-mm-dd hh:mm';
    for (const r of rows) ws.addRow(r).commit();
    ws.commit();
    await wb.commit();
    return file;
  }
  const wb = new ExcelJS.Workbook();
  wb.addWorksheet('Cover').addRow(['This is a cover sheet']);
  const ws = wb.addWorksheet('Stock');
  for (const r of rows) ws.addRow(r);
  ws.getColumn(5).numFmt = 'yyyy-mm-dd hh:mm';
  await wb.xlsx.writeFile(file);
  return file;
}

const expected = [
  {
    record_id: '4901234567890',
    display_name: '髙橋の㈱りんご',
    api_value: '髙橋の㈱りんご',
    aliases: [],
    attributes: { price: 1200.5, total: 2401, arrived: '2024-03-05', note: 'rich text' },
    active: true,
  },
  {
    record_id: 'B-2',
    display_name: 'Banana',
    api_value: 'Banana',
    aliases: [],
    attributes: { price: 80, total: 160, arrived: '2024-03-05T13:30:00', note: '' },
    active: false,
  },
];

describe('XLSX source', () => {
  it('reads a sheet by name: shared strings, numbers, dates, formulas, rich text, booleans', async () => {
    const file = await buildWorkbook(await tempDir());
    const r = await read(file, { sheet: 'Stock' });
    expect(r.rejected).toBeNull();
    expect(r.records).toEqual(expected);
    expect(r.lines).toEqual([2, 3]);
    expect(r.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('reads a sheet by position, and inline strings from a streaming writer', async () => {
    const dir = await tempDir();
    const byIndex = await read(await buildWorkbook(dir), { sheet: 2 });
    expect(byIndex.records).toEqual(expected);
    const inline = await read(await buildWorkbook(dir, { streaming: true }));
    expect(inline.rejected).toBeNull();
    expect(inline.records).toEqual(expected);
  });

  it('refuses a missing sheet and names the sheets there are', async () => {
    const r = await read(await buildWorkbook(await tempDir()), { sheet: 'Nope' });
    expect(r.rejected?.code).toBe('SHEET_NOT_FOUND');
    expect(r.rejected?.message).toContain('"Stock"');
  });

  it('refuses a file that is not a zip, and a zip that is not a workbook', async () => {
    const dir = await tempDir();
    const csv = join(dir, 'really.csv.xlsx');
    await writeFile(csv, 'SKU,Name\nA,B\n');
    expect((await read(csv)).rejected?.code).toBe('WRONG_FORMAT');
    const zip = join(dir, 'other.xlsx');
    await writeFile(zip, makeZip([{ name: 'readme.txt', data: Buffer.from('hello') }]));
    expect((await read(zip)).rejected?.code).toBe('WRONG_FORMAT');
  });

  it('refuses a zip bomb from its central directory, before inflating', async () => {
    const dir = await tempDir();
    const bomb = join(dir, 'bomb.xlsx');
    const big = Buffer.alloc(20 * 1024 * 1024, 0x20); // 20 MiB of spaces deflates ~1000×
    await writeFile(bomb, makeZip([{ name: 'xl/workbook.xml', data: Buffer.from('<workbook/>') }, { name: 'xl/worksheets/sheet1.xml', data: big }]));
    const r = await read(bomb);
    expect(r.rejected?.code).toBe('ZIP_BOMB');
    expect(r.rejected?.context.setting).toBe('limits.max_compression_ratio');
    const total = await read(bomb, { limits: { max_compression_ratio: 100_000, max_uncompressed_bytes: 1024 * 1024 } });
    expect(total.rejected?.code).toBe('ZIP_BOMB');
    expect(total.rejected?.context.setting).toBe('limits.max_uncompressed_bytes');
  });
});
