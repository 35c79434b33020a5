import { describe, expect, it } from 'vitest';
import { mappingConfigSchema, type MappingConfigInput } from '../../src/mapping/config.js';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { loadConfig } from '../../src/config/load.js';
import { ConfigError } from '../../src/config/errors.js';
import { readText, tempDir } from '../sources/helpers.js';

// Issue 16: the words a shop's IT person needs for real exports, read through real files.
const base = { record_id: 'SKU', display_name: 'Name', api_value: 'SKU' };
const lenient = { on_row_errors: 'skip_rows' as const, max_bad_row_ratio: 1 };

async function read(csv: string, mapping: Partial<MappingConfigInput> & { fields?: Record<string, unknown> }) {
  return readText(csv, lenient, { ...mapping, fields: { ...base, ...mapping.fields } } as MappingConfigInput);
}

describe('numbers say their grammar', () => {
  const csv = 'SKU,Name,Price\nA,a,1250\nB,b,"1,250"\nC,c,1.2E+3\nD,d,3.50\n';

  it('by default only plain numbers: a thousands mark or an exponent is a row error naming the line', async () => {
    const r = await read(csv, { fields: { 'attributes.price': { column: 'Price', transforms: ['number'] } } });
    expect(r.records.map((x) => [x.record_id, x.attributes.price])).toEqual([['A', 1250], ['D', 3.5]]);
    expect(r.row_errors.map((e) => [e.line, e.value, e.code])).toEqual([[3, '1,250', 'TRANSFORM_FAILED'], [4, '1.2E+3', 'TRANSFORM_FAILED']]);
    expect(r.row_errors[0]!.reason).toContain('mapping.numbers');
  });

  it('mapping.numbers gives every number transform the old grammar back in one option', async () => {
    const r = await read(csv, { numbers: { thousands_separator: ',', exponent: true }, fields: { 'attributes.price': { column: 'Price', transforms: ['number'] } } });
    expect(r.row_errors).toEqual([]);
    expect(r.records.map((x) => x.attributes.price)).toEqual([1250, 1250, 1200, 3.5]);
  });

  it('a transform\'s own options override the mapping\'s, key by key', async () => {
    const r = await read('SKU,Name,Preis\nA,a,1.234,5\n'.replace('1.234,5', '"1.234,5"'), {
      numbers: { thousands_separator: '.' },
      fields: { 'attributes.price': { column: 'Preis', transforms: [{ number: { decimal_separator: ',' } }] } },
    });
    expect(r.records[0]!.attributes.price).toBe(1234.5);
  });

  it('a value a number cannot hold exactly is a row error, never published rounded', async () => {
    // Review of issue 16: 12345678901234567 was published as 12345678901234568 and 99999999999999999999 as 1e20.
    const big = 'SKU,Name,Qty,Price\nA,a,9007199254740991,0.1234567890123450\nB,b,12345678901234567,1\nC,c,99999999999999999999,1\nD,d,1,1.2345678901234567\nE,e,-9007199254740993,100000000000000000000\n';
    const r = await read(big, {
      fields: { 'attributes.qty': { column: 'Qty', transforms: ['integer'] }, 'attributes.price': { column: 'Price', transforms: ['number'] } },
    });
    expect(r.records.map((x) => [x.record_id, x.attributes.qty, x.attributes.price])).toEqual([['A', 9007199254740991, 0.123456789012345]]);
    expect(r.row_errors.map((e) => [e.line, e.column, e.value])).toEqual([
      [3, 'Qty', '12345678901234567'],
      [4, 'Qty', '99999999999999999999'],
      [5, 'Price', '1.2345678901234567'],
      [6, 'Qty', '-9007199254740993'],
    ]);
    expect(r.row_errors[0]!.reason).toMatch(/more digits than a number keeps exactly.*keep it as text/);
  });

  it('the config refuses a decimal mark that is also the thousands mark, wherever each is set', () => {
    const r = mappingConfigSchema.safeParse({ numbers: { thousands_separator: ',' }, fields: { ...base, 'attributes.p': { column: 'P', transforms: [{ number: { decimal_separator: ',' } }] } } });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]).toMatchObject({ path: ['fields', 'attributes.p', 'transforms', 0], message: expect.stringContaining('both ","') });
  });
});

describe('date', () => {
  it('reads XLSX-style ISO dates and text dates in the configured order into YYYY-MM-DD; impossible and two-digit-year dates are row errors', async () => {
    const csv = 'SKU,Name,D\nA,a,2024/3/15\nB,b,2024-03-15T10:30:00\nC,c,2024年3月5日\nD,d,20240229\nE,e,2023-02-29\nF,f,3/15/24\nG,g,\n';
    const r = await read(csv, { fields: { 'attributes.since': { column: 'D', transforms: ['date'] } } });
    expect(r.records.map((x) => [x.record_id, x.attributes.since])).toEqual([['A', '2024-03-15'], ['B', '2024-03-15'], ['C', '2024-03-05'], ['D', '2024-02-29'], ['G', null]]);
    expect(r.row_errors.map((e) => [e.line, e.value])).toEqual([[6, '2023-02-29'], [7, '3/15/24']]);
  });

  it.each([
    ['dmy', '15.03.2024', '2024-03-15'],
    ['dmy', '1/2/2024', '2024-02-01'],
    ['mdy', '1/2/2024', '2024-01-02'],
    ['mdy', '2024-01-02', '2024-01-02'],
  ] as const)('order %s reads %s as %s', async (order, text, want) => {
    const r = await read(`SKU,Name,D\nA,a,${text}\n`, { fields: { 'attributes.d': { column: 'D', transforms: [{ date: { order } }] } } });
    expect(r.records[0]?.attributes.d).toBe(want);
  });

  it('a text date in another order is refused, never read some other way', async () => {
    const r = await read('SKU,Name,D\nA,a,15.03.2024\n', { fields: { 'attributes.d': { column: 'D', transforms: ['date'] } } });
    expect(r.row_errors).toEqual([expect.objectContaining({ line: 2, code: 'TRANSFORM_FAILED', reason: expect.stringContaining('order ymd') })]);
  });
});

describe('booleans from several columns (all / any)', () => {
  // Square's item library: an item is sellable when Sellable = Y and Archived = N.
  const square = 'SKU,Name,Sellable,Archived\nA,a,Y,N\nB,b,Y,Y\nC,c,N,N\nD,d,y,\n';

  it('active from all of several conditions', async () => {
    const r = await read(square, {
      fields: { active: { all: [{ column: 'Sellable', one_of: ['Y'] }, { any: [{ column: 'Archived', one_of: ['N'] }, { column: 'Archived', empty: true }] }] } },
    });
    expect(r.records.map((x) => [x.record_id, x.active])).toEqual([['A', true], ['B', false], ['C', false], ['D', true]]);
  });

  it('a boolean attribute from any of several conditions, and not-empty tests', async () => {
    const r = await read(square, { fields: { 'attributes.flagged': { any: [{ column: 'Archived', one_of: ['Y'] }, { column: 'Archived', empty: true }] }, 'attributes.has_archived': { all: [{ column: 'Archived', empty: false }] } } });
    expect(r.records.map((x) => [x.attributes.flagged, x.attributes.has_archived])).toEqual([[false, true], [true, true], [false, true], [true, false]]);
  });

  it('match_case makes words match with their case (y is then not Y)', async () => {
    const r = await read(square, { match_case: true, fields: { active: { all: [{ column: 'Sellable', one_of: ['Y'] }] } } });
    expect(r.records.map((x) => x.active)).toEqual([true, true, false, false]);
  });

  it('a missing condition column refuses the file, naming it', async () => {
    const r = await read(square, { fields: { active: { all: [{ column: 'Sold', one_of: ['Y'] }] } } });
    expect(r.rejected).toMatchObject({ code: 'COLUMN_NOT_FOUND', message: expect.stringContaining('"Sold"') });
  });

  it('the config keeps all/any to boolean fields', () => {
    const r = mappingConfigSchema.safeParse({ fields: { ...base, display_name: { all: [{ column: 'A', one_of: ['Y'] }] } } });
    expect(r.error!.issues[0]!.message).toMatch(/only active and attributes/);
  });
});

describe('match_case', () => {
  it('applies to boolean words and null_words', async () => {
    const csv = 'SKU,Name,On,Stock\nA,a,Yes,N/A\nB,b,yes,n/a\n';
    const fields = { active: { column: 'On', transforms: [{ boolean: { true_words: ['Yes'], false_words: ['No'] } }] }, 'attributes.stock': { column: 'Stock', transforms: [{ null_words: ['N/A'] }] } };
    const insensitive = await read(csv, { fields });
    expect(insensitive.records.map((x) => [x.active, x.attributes.stock])).toEqual([[true, null], [true, null]]);
    const sensitive = await read(csv, { match_case: true, fields });
    expect(sensitive.records.map((x) => [x.record_id, x.attributes.stock])).toEqual([['A', null]]);
    expect(sensitive.row_errors).toEqual([expect.objectContaining({ line: 3, value: 'yes', code: 'INVALID_BOOLEAN' })]);
  });
});

describe('empty_is_null', () => {
  it('makes an empty cell (and an empty result) of an attribute null instead of ""', async () => {
    const csv = 'SKU,Name,Colour,Shown\nA,a,,\nB,b,red,Y\nC,c,  ,N\n';
    const r = await read(csv, { fields: { 'attributes.colour': { column: 'Colour', empty_is_null: true }, 'attributes.plain': 'Colour', 'attributes.shown': { column: 'Shown', empty_is_null: true, transforms: ['boolean'] } } });
    expect(r.row_errors).toEqual([]);
    expect(r.records.map((x) => x.attributes)).toEqual([
      { colour: null, plain: '', shown: null },
      { colour: 'red', plain: 'red', shown: true },
      { colour: null, plain: '  ', shown: false },
    ]);
  });

  it('is only for attributes', () => {
    expect(mappingConfigSchema.safeParse({ fields: { ...base, display_name: { column: 'N', empty_is_null: true } } }).success).toBe(false);
  });
});

describe('template placeholders with their own transforms', () => {
  it('transforms one placeholder before the text is joined, and a failure names that placeholder\'s column', async () => {
    const csv = 'SKU,Name,Size,Price\nA,tee,  s ,1200\nB,cap,m,x\n';
    const r = await read(csv, { fields: { display_name: { template: '{Name} ({Size}) {#4}', placeholder_transforms: { Size: ['trim', 'uppercase'], '#4': ['integer'] } } } });
    expect(r.records.map((x) => x.display_name)).toEqual(['tee (S) 1200']);
    expect(r.row_errors).toEqual([expect.objectContaining({ line: 3, column: 'Price', value: 'x', reason: expect.stringContaining('{#4}') })]);
  });

  it('the config refuses transforms for a placeholder the template does not have', () => {
    const r = mappingConfigSchema.safeParse({ fields: { ...base, display_name: { template: '{Name}', placeholder_transforms: { Size: ['trim'] } } } });
    expect(r.error!.issues[0]!.message).toMatch(/"Size" is not a placeholder.*\{Name\}/);
  });
});

describe('aliases', () => {
  it('are kept once each, in order: a GTIN and a JAN column holding the same code give one alias', async () => {
    const csv = 'SKU,Name,GTIN,JAN\nA,a,4901234567894,4901234567894\nB,b,111,222\n';
    const r = await read(csv, { fields: { aliases: { columns: ['GTIN', 'JAN'], separator: '|' } } });
    expect(r.records.map((x) => x.aliases)).toEqual([['4901234567894'], ['111', '222']]);
  });
});

describe('config messages of the mapping, as validate prints them', () => {
  async function problems(field: string): Promise<string[]> {
    const dir = await tempDir();
    const file = join(dir, 'connector.yaml');
    await writeFile(
      file,
      `datasets:\n  shop-1:\n    api: { base_url: "http://127.0.0.1:9", key: { env: K } }\n    source: { type: csv }\n    mapping:\n      fields:\n        record_id: SKU\n        display_name: Name\n        ${field}\n`,
    );
    try {
      await loadConfig(file);
    } catch (err) {
      if (err instanceof ConfigError) return err.issues.map((i) => `${i.line}: ${i.path}: ${i.message}`);
      throw err;
    }
    return [];
  }

  it('an unknown transform names itself and lists the known ones', async () => {
    const [m] = await problems('api_value: { column: SKU, transforms: [trim, eval] }');
    expect(m).toMatch(/^9: datasets\.shop-1\.mapping\.fields\.api_value: transforms\.1: unknown transform "eval"/);
    expect(m).toMatch(/known transforms: trim, collapse_spaces, .*date.*regex_replace/);
    expect((await problems('api_value: { column: SKU, transforms: [{ numbr: {} }] }'))[0]).toMatch(/unknown transform "numbr"/);
  });

  it('a known transform with a bad option says which option', async () => {
    expect((await problems('api_value: { column: SKU, transforms: [{ number: { decimal_separator: ";" } }] }'))[0]).toMatch(/decimal_separator: .*"\."/);
    expect((await problems('api_value: { column: SKU, transforms: [{ boolean: { yes_words: [y] } }] }'))[0]).toMatch(/unknown option "yes_words"/);
    expect((await problems('api_value: { column: SKU, transforms: [default] }'))[0]).toMatch(/"default" needs its options/);
  });

  it('an unknown option of a field is named', async () => {
    expect((await problems('api_value: { column: SKU, transform: [trim] }'))[0]).toMatch(/unknown option "transform"/);
  });
});
