import { describe, expect, it } from 'vitest';
import { mappingConfigSchema, type MappingConfigInput } from '../../src/mapping/config.js';
import { readText } from '../sources/helpers.js';

// Issue 11 point 7: Odoo writes False as an empty cell. An empty cell under a boolean must never
// quietly become true (active) or no value (an attribute): it is a row error unless the mapping says
// what empty means, by a `default` (before or after the boolean) or by listing "" as a word.
const fields = { record_id: 'SKU', display_name: 'Name', api_value: 'SKU' };
const odoo = 'SKU,Name,Active\nP-1,Tea,True\nP-2,Old tea,\nP-3,Milk,False\n';

async function read(csv: string, extra: Record<string, unknown>, source: Record<string, unknown> = { on_row_errors: 'skip_rows', max_bad_row_ratio: 1 }) {
  return readText(csv, source, { fields: { ...fields, ...extra } } as MappingConfigInput);
}

describe('an empty cell under a boolean', () => {
  it.each([
    ['active, no transforms', { active: 'Active' }],
    ['active, boolean words', { active: { column: 'Active', transforms: [{ boolean: { true_words: ['True'], false_words: ['False'] } }] } }],
    ['active, trim then boolean', { active: { column: 'Active', transforms: ['trim', 'boolean'] } }],
    ['a boolean attribute', { 'attributes.published': { column: 'Active', transforms: ['boolean'] } }],
  ])('%s: is an INVALID_BOOLEAN row error with its line, never true or null', async (_, extra) => {
    const r = await read(odoo, extra);
    expect(r.row_errors).toEqual([expect.objectContaining({ line: 3, column: 'Active', value: '', code: 'INVALID_BOOLEAN' })]);
    expect(r.row_errors[0]!.reason).toMatch(/empty/);
    expect(r.row_errors[0]!.reason).toMatch(/default/);
    expect(r.records.map((x) => x.record_id)).toEqual(['P-1', 'P-3']);
  });

  it('whitespace only counts as empty', async () => {
    const r = await read('SKU,Name,Active\nP-1,Tea,  \n', { active: 'Active' });
    expect(r.row_errors).toEqual([expect.objectContaining({ line: 2, code: 'INVALID_BOOLEAN' })]);
  });

  it('with the default policy the whole file is refused: nothing is published', async () => {
    const r = await readText(odoo, {}, { fields: { ...fields, active: 'Active' } });
    expect(r.rejected?.code).toBe('ROW_ERRORS');
    expect(r.records).toEqual([]);
  });

  it.each([
    ['"" listed as a false word', { active: { column: 'Active', transforms: [{ boolean: { true_words: ['True'], false_words: ['False', ''] } }] } }, 'active'],
    ['a default before the boolean', { active: { column: 'Active', transforms: [{ default: 'False' }, 'boolean'] } }, 'active'],
    ['a default after the boolean', { active: { column: 'Active', transforms: ['boolean', { default: false }] } }, 'active'],
    ['a default after the boolean and another transform', { active: { column: 'Active', transforms: ['boolean', 'trim', { default: false }] } }, 'active'],
    ['a default after a boolean attribute', { 'attributes.published': { column: 'Active', transforms: ['boolean', { default: false }] } }, 'published'],
    ['"" listed for a boolean attribute', { 'attributes.published': { column: 'Active', transforms: [{ boolean: { true_words: ['true'], false_words: ['false', ''] } }] } }, 'published'],
  ])('is what the mapping says it means: %s', async (_, extra, field) => {
    const r = await read(odoo, extra);
    expect(r.row_errors).toEqual([]);
    const value = (rec: (typeof r.records)[number]) => (field === 'active' ? rec.active : rec.attributes[field]);
    expect(r.records.map(value)).toEqual([true, false, false]);
  });

  it('null_words say which words mean no value: an attribute becomes null, active has no "no value" and refuses it', async () => {
    const csv = 'SKU,Name,Active\nP-1,Tea,True\nP-2,Old tea,N/A\n';
    const attr = await read(csv, { 'attributes.published': { column: 'Active', transforms: [{ null_words: ['N/A'] }, 'boolean'] } });
    expect(attr.row_errors).toEqual([]);
    expect(attr.records.map((x) => x.attributes.published)).toEqual([true, null]);
    const active = await read(csv, { active: { column: 'Active', transforms: [{ null_words: ['N/A'] }, 'boolean'] } });
    expect(active.row_errors).toEqual([expect.objectContaining({ line: 3, column: 'Active', code: 'INVALID_BOOLEAN' })]);
    // …and the empty cell null_words did not list is still an error
    const empty = await read('SKU,Name,Active\nP-1,Tea,\n', { 'attributes.published': { column: 'Active', transforms: [{ null_words: ['N/A'] }, 'boolean'] } });
    expect(empty.row_errors).toEqual([expect.objectContaining({ line: 2, code: 'INVALID_BOOLEAN' })]);
  });

  it('a word that is not a boolean is an INVALID_BOOLEAN row error too', async () => {
    const r = await read('SKU,Name,Active\nP-1,Tea,maybe\n', { active: 'Active' });
    expect(r.row_errors).toEqual([expect.objectContaining({ line: 2, value: 'maybe', code: 'INVALID_BOOLEAN' })]);
  });

  it('an unmapped active is still true', async () => {
    const r = await read(odoo, {});
    expect(r.records.map((x) => x.active)).toEqual([true, true, true]);
  });
});

describe('boolean words in the config', () => {
  const parse = (boolean: unknown) => mappingConfigSchema.safeParse({ fields: { ...fields, active: { column: 'A', transforms: [{ boolean }] } } });
  it('may list "" (an empty cell) explicitly', () => {
    expect(parse({ true_words: ['True'], false_words: ['False', ''] }).success).toBe(true);
  });
  it('may not list a word as both true and false (matched without case)', () => {
    const r = parse({ true_words: ['Y', ''], false_words: ['y'] });
    expect(r.success).toBe(false);
    expect(r.error!.issues[0]!.message).toMatch(/"y".*both/);
  });
});
