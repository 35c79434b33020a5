import { afterEach, describe, expect, it } from 'vitest';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sourceConfigSchema } from '../../src/sources/config.js';
import { handMadeEntries, makeZip } from '../sources/xlsx-parts.js';
import { ids, scenario, type Scenario } from './harness.js';

// Issue 11: an export read wrongly publishes nothing. Each case syncs against the emulator over real HTTP.
let s: Scenario;
afterEach(async () => s?.close());

const mapping = { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'Code', 'attributes.stock': 'Stock' } };
const FIRST = 'SKU,Name,Code,Stock\nB010,Tea,tea,12\nB020,Rice,rice,7\nB030,Milk,milk,530\n';

/** Every write the emulator received after the first sync (none is the point). */
function writesSince(from: number): string[] {
  return s.em.emulator.requests
    .slice(from)
    .filter((r) => r.method !== 'GET')
    .map((r) => `${r.method} ${r.path}`);
}

/** A scenario whose dataset holds B010, B020, B030 published by a first sync; returns the request count then. */
async function afterFirstSync(): Promise<number> {
  s = await scenario({ mapping });
  const file = join(s.dir, 'first.csv');
  await writeFile(file, FIRST);
  expect((await s.engine.sync(s.ds, { file })).result).toBe('published');
  return s.em.emulator.requests.length;
}

function stockOf(id: string): unknown {
  return s.published().find((r) => r.record_id === id)?.attributes.stock;
}

describe('point 4: short and truncated rows', () => {
  it('an export cut in its last row is refused whole (TRUNCATED): nothing sent, nothing deleted', async () => {
    const from = await afterFirstSync();
    const file = join(s.dir, 'cut.csv');
    await writeFile(file, 'SKU,Name,Code,Stock\nB010,Tea,tea,12\nB020,Rice,rice,7\nB030,Milk,mi');
    const sum = await s.engine.sync(s.ds, { file });
    expect(sum).toMatchObject({ result: 'rejected', code: 'TRUNCATED' });
    expect(writesSince(from)).toEqual([]);
    expect(ids(s.published())).toEqual(['B010', 'B020', 'B030']);
    expect(stockOf('B030')).toBe('530');
  });

  it('a short row is a row error with its line in the reject file; nothing from the file is published', async () => {
    const from = await afterFirstSync();
    const file = join(s.dir, 'short.csv');
    await writeFile(file, 'SKU,Name,Code,Stock\nB010,Tea,tea,13\nB901,Short,short\nB020,Rice,rice,7\nB030,Milk,milk,530\n');
    const sum = await s.engine.sync(s.ds, { file });
    expect(sum).toMatchObject({ result: 'rejected', code: 'ROW_ERRORS' });
    expect(writesSince(from)).toEqual([]);
    expect(stockOf('B010')).toBe('12');
    expect(s.published().some((r) => r.record_id === 'B901')).toBe(false);
  });
});

describe('point 5: XLSX entries against their CRC-32', () => {
  const cell = (ref: string, t: string) => `<c r="${ref}" t="inlineStr"><is><t>${t}</t></is></c>`;
  const row = (r: number, cells: string[]) => `<row r="${r}">${cells.map((t, i) => cell(`${'ABCD'[i]}${r}`, t)).join('')}</row>`;
  const sheet = [['SKU', 'Name', 'Code', 'Stock'], ['B010', 'Tea', 'tea', '12'], ['B020', 'Rice', 'rice', '7']].map((c, i) => row(i + 1, c)).join('');

  it('a workbook whose sheet was damaged (B010 stored as C010, CRC kept) publishes nothing', async () => {
    s = await scenario({ mapping });
    s.ds = { ...s.ds, source: sourceConfigSchema.parse({ type: 'xlsx' }) };
    const write = async (name: string, damage: boolean) => {
      const entries = handMadeEntries({ sheets: [{ name: 'S', rows: sheet }] });
      const e = entries.find((x) => x.name === 'xl/worksheets/sheet1.xml')!;
      if (damage) e.written = Buffer.from(e.data.toString().replace('B010', 'C010'));
      const file = join(s.dir, name);
      await writeFile(file, makeZip(entries));
      return file;
    };
    expect((await s.engine.sync(s.ds, { file: await write('good.xlsx', false) })).result).toBe('published');
    const from = s.em.emulator.requests.length;
    const sum = await s.engine.sync(s.ds, { file: await write('bad.xlsx', true) });
    expect(sum).toMatchObject({ result: 'rejected', code: 'ZIP_CORRUPT' });
    expect(sum.message).toContain('xl/worksheets/sheet1.xml');
    expect(writesSince(from)).toEqual([]);
    expect(ids(s.published())).toEqual(['B010', 'B020']);
  });
});

describe('point 6: a link handed to a sync', () => {
  it('is refused unless the caller allows links (a watch folder never does); nothing is sent', async () => {
    const from = await afterFirstSync();
    await mkdir(join(s.dir, 'outside'));
    const target = join(s.dir, 'outside', 'other-shop.csv');
    await writeFile(target, 'SKU,Name,Code,Stock\nZ900,Secret,z,1\n');
    const link = join(s.dir, 'stock.csv');
    await symlink(target, link);
    const sum = await s.engine.sync(s.ds, { file: link });
    expect(sum).toMatchObject({ result: 'rejected', code: 'LINK_NOT_FOLLOWED' });
    expect(writesSince(from)).toEqual([]);
    expect(ids(s.published())).toEqual(['B010', 'B020', 'B030']);
  });
});
