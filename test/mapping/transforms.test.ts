import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { compileTransform } from '../../src/mapping/transforms.js';
import { fixScientific } from '../../src/mapping/scientific.js';
import { mappingConfigSchema, transformSchema } from '../../src/mapping/config.js';
import { quickValid, quickValidFor } from '../../src/mapping/quick-check.js';
import { validateRecord } from '../../src/model/record.js';
import { ValueError, type Value } from '../../src/mapping/value.js';

const t = (spec: unknown, v: Value) => compileTransform(transformSchema.parse(spec))(v);

describe('transforms', () => {
  it.each([
    ['trim', '  a b  ', 'a b'],
    ['collapse_spaces', 'a \t\u3000 b', 'a b'],
    ['strip_prefix', "'0123", '0123'],
    ['strip_prefix', '#45', '45'],
    ['strip_prefix', '45', '45'],
    ['number', '1234.5', 1234.5],
    [{ number: { thousands_separator: ',' } }, '1,234.5', 1234.5],
    [{ number: { exponent: true } }, '1.2E+3', 1200],
    [{ number: { decimal_separator: ',' } }, '0,99', 0.99],
    ['number', '-3', -3],
    ['number', '', null],
    [{ number: { decimal_separator: ',', thousands_separator: '.' } }, '1.234,5', 1234.5],
    [{ number: { decimal_separator: ',', thousands_separator: ' ' } }, '1 234,5', 1234.5],
    ['integer', '-12', -12],
    ['boolean', 'TRUE', true],
    ['boolean', 'n', false],
    ['boolean', '1', true],
    ['boolean', 'No', false],
    [{ boolean: { true_words: ['表示'], false_words: ['非表示'] } }, '非表示', false],
    ['split', 'a| b ||c', ['a', 'b', 'c']],
    [{ split: { separator: ';' } }, 'a;b', ['a', 'b']],
    [{ default: 'x' }, '', 'x'],
    [{ default: 'x' }, 'y', 'y'],
    [{ null_words: ['not stocked', 'variable'] }, ' Not Stocked ', null],
    ['lowercase', 'ÀB', 'àb'],
    ['uppercase', 'ab', 'AB'],
    ['nfkc', 'ＡＢＣ１２３ｶﾅ', 'ABC123カナ'],
    [{ regex_replace: { pattern: '[^0-9]', replacement: '' } }, 'a1b2', '12'],
    ['fix_scientific', '4.901234567890E+12', '4901234567890'],
    ['fix_scientific', 'A-1', 'A-1'],
  ])('%j on %j gives %j', (spec, input, out) => {
    expect(t(spec, input)).toEqual(out);
  });

  it.each([
    ['number', '1,5'],
    ['number', '1,250'],
    ['number', '1.2E+3'],
    ['number', '¥100'],
    ['number', '1 250'],
    [{ number: { thousands_separator: ',' } }, '1,25'],
    [{ number: { decimal_separator: ',' } }, '1.5'],
    ['number', '12abc'],
    ['integer', '1.5'],
    ['boolean', 'maybe'],
  ])('%j refuses %j with a row error', (spec, input) => {
    expect(() => t(spec, input)).toThrow(ValueError);
    expect(() => t(spec, input)).toThrow(expect.objectContaining({ code: spec === 'boolean' ? 'INVALID_BOOLEAN' : 'TRANSFORM_FAILED' }));
  });

  it('flags scientific notation that lost digits', () => {
    expect(() => fixScientific('4.9E+12')).toThrow(expect.objectContaining({ code: 'PRECISION_LOST' }));
    expect(() => fixScientific('1.5E+0')).toThrow(expect.objectContaining({ code: 'TRANSFORM_FAILED' }));
  });
});

describe('mapping config', () => {
  it('is strict: unknown keys, unknown fields and two sources are refused', () => {
    const base = { record_id: 'SKU', display_name: 'Name', api_value: 'Code' };
    expect(mappingConfigSchema.safeParse({ fields: base }).success).toBe(true);
    expect(mappingConfigSchema.safeParse({ fields: base, extra: 1 }).success).toBe(false);
    expect(mappingConfigSchema.safeParse({ fields: { ...base, colour: 'C' } }).success).toBe(false);
    expect(mappingConfigSchema.safeParse({ fields: { ...base, 'attributes.__proto__': 'C' } }).success).toBe(false);
    expect(mappingConfigSchema.safeParse({ fields: { ...base, api_value: { column: 'A', const: 'b' } } }).success).toBe(false);
    expect(mappingConfigSchema.safeParse({ fields: { record_id: 'SKU' } }).success).toBe(false);
    expect(mappingConfigSchema.safeParse({ fields: { ...base, api_value: { column: 'A', transforms: ['eval'] } } }).success).toBe(false);
  });
});

describe('quickValid', () => {
  it('never lets through a record that validateRecord refuses', () => {
    const text = fc.oneof(fc.string({ maxLength: 3 }), fc.constantFrom('A-1', 'x'.repeat(129), 'ok', 'a b', 'x'.repeat(201), 'x'.repeat(501)));
    const attr = fc.oneof(fc.string({ maxLength: 3 }), fc.double(), fc.boolean(), fc.constant(null), fc.constant({}), fc.constant([1]));
    fc.assert(
      fc.property(
        fc.record({
          record_id: text,
          display_name: text,
          api_value: text,
          aliases: fc.array(fc.oneof(text, fc.constant(3 as unknown as string)), { maxLength: 22 }),
          attributes: fc.dictionary(fc.oneof(fc.constantFrom('ok', 'bad-key', 'k'.repeat(65)), fc.string({ maxLength: 3 })), attr, { maxKeys: 52 }),
          active: fc.oneof(fc.boolean(), fc.constant('true' as unknown as boolean)),
        }),
        (r) => {
          if (quickValid(r as never)) expect(validateRecord(r).ok).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('compiled for a mapping\'s attribute keys, never lets through a record that validateRecord refuses', () => {
    const text = fc.oneof(fc.string({ maxLength: 3 }), fc.constantFrom('A-1', 'x'.repeat(129), 'ok', 'a b', 'x'.repeat(201), 'x'.repeat(501)));
    const attr = fc.oneof(fc.string({ maxLength: 3 }), fc.double(), fc.boolean(), fc.constant(null), fc.constant({}), fc.constant([1]));
    const key = fc.oneof(fc.constantFrom('ok', 'price', 'bad-key', 'k'.repeat(65), 'constructor'), fc.string({ maxLength: 3 }));
    fc.assert(
      fc.property(
        fc.uniqueArray(key, { maxLength: 52 }),
        fc.record({ record_id: text, display_name: text, api_value: text, aliases: fc.array(fc.oneof(text, fc.constant(3 as unknown as string)), { maxLength: 22 }), active: fc.oneof(fc.boolean(), fc.constant('true' as unknown as boolean)) }),
        fc.array(attr, { minLength: 52, maxLength: 52 }),
        (keys, base, values) => {
          const attributes: Record<string, unknown> = {};
          keys.forEach((k, i) => (attributes[k] = values[i]));
          const r = { ...base, attributes };
          if (quickValidFor(keys)(r)) expect(validateRecord(r).ok).toBe(true);
        },
      ),
      { numRuns: 2000 },
    );
    expect(quickValidFor(['price', 'stock'])({ record_id: 'A-1', display_name: 'x', api_value: 'y', aliases: ['a'], attributes: { price: 1, stock: null }, active: true })).toBe(true);
  });
});
