import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { sourceConfigSchema } from '../../src/sources/config.js';
import { mappingConfigSchema } from '../../src/mapping/config.js';
import { readExportFile } from '../../src/sources/read.js';
import { handMadeEntries, makeZip, type ZipInput } from './xlsx-parts.js';
import { tempDir } from './helpers.js';

// Issue 11 point 5: every archive entry read is held to its CRC-32, so a damaged entry that still inflates publishes nothing.
const mapping = mappingConfigSchema.parse({ fields: { record_id: 'SKU', display_name: 'Name', api_value: 'SKU' } });
const inline = (ref: string, t: string) => `<c r="${ref}" t="inlineStr"><is><t>${t}</t></is></c>`;
const ROWS = `<row r="1">${inline('A1', 'SKU')}${inline('B1', 'Name')}</row><row r="2">${inline('A2', 'B010')}${inline('B2', 'Tea')}</row>`;
const SHARED_ROWS = `<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row><row r="2"><c r="A2" t="s"><v>2</v></c><c r="B2" t="s"><v>3</v></c></row>`;

/** A workbook whose `part` is damaged by `damage` (given the entry); the rest is honest. */
async function damaged(part: string, damage: (e: ZipInput) => void, shared = false): Promise<string> {
  const entries = handMadeEntries(shared ? { sheets: [{ name: 'S', rows: SHARED_ROWS }], sharedStrings: ['SKU', 'Name', 'B010', 'Tea'] } : { sheets: [{ name: 'S', rows: ROWS }] });
  const entry = entries.find((e) => e.name === part);
  if (!entry) throw new Error(`no part ${part}`);
  damage(entry);
  const file = join(await tempDir(), 'book.xlsx');
  await writeFile(file, makeZip(entries));
  return file;
}

const read = (file: string) => readExportFile(file, sourceConfigSchema.parse({ type: 'xlsx' }), mapping);

/** The same bytes with B010 turned into C010: one flipped byte, still well-formed XML. */
function flipped(data: Buffer): Buffer {
  const at = data.indexOf('B010');
  const out = Buffer.from(data);
  out[at] = 'C'.charCodeAt(0);
  return out;
}

describe('XLSX entries are checked against their CRC-32', () => {
  it('an honest workbook reads (the check passes on real CRCs)', async () => {
    const r = await read(await damaged('xl/worksheets/sheet1.xml', () => {}));
    expect(r.rejected).toBeNull();
    expect(r.records.map((x) => x.record_id)).toEqual(['B010']);
  });

  it('a stored sheet with one byte flipped is refused naming the part; C010 is not read', async () => {
    const file = await damaged('xl/worksheets/sheet1.xml', (e) => {
      e.method = 0;
      e.written = flipped(e.data);
    });
    const r = await read(file);
    expect(r.rejected).toMatchObject({ code: 'ZIP_CORRUPT', context: { file, part: 'xl/worksheets/sheet1.xml' } });
    expect(r.rejected?.message).toMatch(/xl\/worksheets\/sheet1\.xml.*CRC-32/);
    expect(r.records).toEqual([]);
  });

  it('a deflated sheet re-deflated from altered content under the old CRC is refused', async () => {
    const r = await read(await damaged('xl/worksheets/sheet1.xml', (e) => (e.written = flipped(e.data))));
    expect(r.rejected).toMatchObject({ code: 'ZIP_CORRUPT', context: { part: 'xl/worksheets/sheet1.xml' } });
    expect(r.records).toEqual([]);
  });

  it('a damaged shared strings table is refused before any row is read', async () => {
    const r = await read(await damaged('xl/sharedStrings.xml', (e) => (e.written = flipped(e.data)), true));
    expect(r.rejected).toMatchObject({ code: 'ZIP_CORRUPT', context: { part: 'xl/sharedStrings.xml' } });
    expect(r.counts.rows).toBe(0);
  });

  it('a damaged workbook part (sheet list) is refused too', async () => {
    const r = await read(
      await damaged('xl/workbook.xml', (e) => {
        e.method = 0;
        e.written = Buffer.from(e.data.toString().replace('name="S"', 'name="T"'));
      }),
    );
    expect(r.rejected).toMatchObject({ code: 'ZIP_CORRUPT', context: { part: 'xl/workbook.xml' } });
  });

  it('an entry that inflates to fewer bytes than declared is ZIP_CORRUPT, naming the part', async () => {
    const r = await read(await damaged('xl/worksheets/sheet1.xml', (e) => (e.written = Buffer.from(e.data.toString().replace('B010', 'B01')))));
    expect(r.rejected).toMatchObject({ code: 'ZIP_CORRUPT', context: { part: 'xl/worksheets/sheet1.xml' } });
  });
});
