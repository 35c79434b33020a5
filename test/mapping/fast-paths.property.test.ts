import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { compileTransform, plainDecimal } from '../../src/mapping/transforms.js';
import { mappingConfigSchema, transformSchema } from '../../src/mapping/config.js';
import { BAD, compileMapping } from '../../src/mapping/compile.js';
import type { RowError } from '../../src/model/row-error.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { ValueError, type Value } from '../../src/mapping/value.js';

// The transforms have fast paths for common cells; these are the plain definitions they must agree with.
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
function referenceNumber(s0: string, decimal: '.' | ',', thousands: string, exponent: boolean, integer: boolean): number | null | 'error' {
  const s = s0.trim();
  if (s === '') return null;
  const dec = escape(decimal);
  const grouped = thousands === '' ? null : `\\d{1,3}(?:${escape(thousands)}\\d{3})+`;
  const body = grouped ? `(?:${grouped}|\\d+)` : '\\d+';
  if (!new RegExp(`^[+-]?(?:${body}(?:${dec}\\d*)?|${dec}\\d+)${exponent ? '(?:[eE][+-]?\\d+)?' : ''}$`).test(s)) return 'error';
  let plain = thousands === '' ? s : s.split(thousands).join('');
  if (decimal === ',') plain = plain.replace(',', '.');
  const n = Number(plain);
  if (!Number.isFinite(n) || (integer && !Number.isInteger(n))) return 'error';
  const significant = plain.split(/[eE]/)[0]!.replace(/\D/g, '').replace(/^0+/, '').replace(/0+$/, '').length;
  if (integer ? !Number.isSafeInteger(n) : significant > 15) return 'error';
  return n;
}
const referenceSplit = (s: string, sep: string) => s.split(sep).map((p) => p.trim()).filter((p) => p !== '');
const referenceCollapse = (s: string) => s.replace(/[\s\u3000]+/g, ' ');
function referenceBoolean(s0: string, t: string[], f: string[]): boolean | null | 'error' {
  const map = new Map<string, boolean>();
  for (const w of t) map.set(w.trim().toLowerCase(), true);
  for (const w of f) map.set(w.trim().toLowerCase(), false);
  // An empty cell is an error unless "" is one of the words (issue 11).
  return map.get(s0.trim().toLowerCase()) ?? 'error';
}

function outcome(fn: (v: Value) => Value, v: Value): Value | 'error' {
  try {
    return fn(v);
  } catch (err) {
    if (err instanceof ValueError) return 'error';
    throw err;
  }
}

const numberish = fc.oneof(
  fc.stringMatching(/^[ +\-0-9.,'eE]{0,12}$/),
  fc.double({ noNaN: true }).map(String),
  fc.integer().map(String),
  fc.stringMatching(/^[+-]?\d{0,12}\.?\d{0,12}$/),
  fc.string({ maxLength: 6 }),
);
const separators = fc.record({
  decimal_separator: fc.constantFrom('.' as const, ',' as const),
  thousands_separator: fc.constantFrom(',', '.', ' ', "'", ''),
  exponent: fc.boolean(),
});

describe('fast paths agree with the plain definitions', () => {
  it('number and integer', () => {
    fc.assert(
      fc.property(numberish, separators.filter((o) => o.decimal_separator !== o.thousands_separator), fc.boolean(), (s, opts, integer) => {
        const fn = compileTransform(transformSchema.parse(integer ? { integer: opts } : { number: opts }));
        const got = outcome(fn, s);
        const want = referenceNumber(s, opts.decimal_separator, opts.thousands_separator, opts.exponent, integer);
        expect(Object.is(got, want) || got === want).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

  it('plain decimal text reads exactly as Number() reads it', () => {
    const plain = fc.stringMatching(/^[+-]?(\d{1,20}(\.\d{0,20})?|\.\d{1,20})$/);
    fc.assert(
      fc.property(fc.oneof(plain, fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e15, max: 1e15 }).map((d) => d.toFixed(Math.abs(d) < 1 ? 15 : 4))), (s) => {
        expect(Object.is(plainDecimal(s), Number(s))).toBe(true);
      }),
      { numRuns: 5000 },
    );
    for (const s of ['-0', '+0.0', '5.', '.5', '007', '0.1', '999999999999999', '9999999999999999', '123456789.123456']) expect(Object.is(plainDecimal(s), Number(s))).toBe(true);
    for (const s of ['', '-', '.', '+.', '1e5', '1,000', ' 1', '1 ', '١']) expect(plainDecimal(s)).toBeNaN();
  });

  it('split', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[ a|;,-]{0,10}$/), fc.constantFrom('|', ';', ', ', '||', ' '), (s, separator) => {
        expect(compileTransform(transformSchema.parse({ split: { separator } }))(s)).toEqual(referenceSplit(s, separator));
      }),
      { numRuns: 2000 },
    );
  });

  it('collapse_spaces', () => {
    const ws = fc.constantFrom(' ', '  ', '\t', '\n', '\r\n', '\u3000', '\u00a0', '\u2003', '\ufeff', 'a', 'b', '表');
    fc.assert(
      fc.property(fc.array(ws, { maxLength: 8 }).map((p) => p.join('')), (s) => {
        expect(compileTransform('collapse_spaces')(s)).toBe(referenceCollapse(s));
      }),
      { numRuns: 2000 },
    );
  });

  it('boolean with configured words', () => {
    const word = fc.constantFrom('表示', '非表示', 'Yes', 'NO', 'İ', 'ß', 'on ', ' Off', '', ' ');
    const key = (w: string) => w.trim().toLowerCase();
    // A word may not mean both (the config refuses it), so the true and false words are one list cut in two.
    const words = fc.uniqueArray(word, { minLength: 2, maxLength: 6, selector: key }).chain((all) => fc.integer({ min: 1, max: all.length - 1 }).map((cut) => [all.slice(0, cut), all.slice(cut)] as const));
    fc.assert(
      fc.property(words, fc.oneof(word, fc.string({ maxLength: 4 }), word.map((w) => ` ${w.toUpperCase()} `), word.map((w) => w.toLowerCase())), ([t, f], s) => {
        const fn = compileTransform(transformSchema.parse({ boolean: { true_words: t, false_words: f } }));
        expect(outcome(fn, s)).toBe(referenceBoolean(s, t, f));
      }),
      { numRuns: 2000 },
    );
  });
});

// The mapper reads each field through a reader specialised for what the field uses, and keeps aliases once each
// without a Set when the list has no repeat: the plain definitions of both, over generated rows.
describe('the mapper\'s specialised paths agree with the plain definitions', () => {
  const header = ['SKU', 'Aliases', 'A', 'B'];
  const cell = fc.constantFrom('', ' ', 'x', ' x ', 'y', '1', 'Y', 'n');
  const mapRow = (fields: Record<string, unknown>, cells: string[]) => {
    const mapper = compileMapping(mappingConfigSchema.parse({ fields: { record_id: 'SKU', display_name: 'SKU', api_value: 'SKU', ...fields } }), header, 'f.csv', 1);
    const errors: RowError[] = [];
    const r = mapper.map(cells, 2, errors);
    return { r, errors, merged: mapper.aliasesMerged };
  };

  it('aliases: in order, each kept once, and a row counted as merged only when it had a repeat', () => {
    const alias = fc.constantFrom('a', 'b', 'c', 'd', ' a', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'q');
    fc.assert(
      fc.property(fc.array(alias, { maxLength: 30 }), (list) => {
        const { r, merged } = mapRow({ aliases: { column: 'Aliases', transforms: ['split'] } }, ['S1', list.join('|'), '', '']);
        const items = referenceSplit(list.join('|'), '|');
        const unique = [...new Set(items)];
        if (unique.length > 20) return expect(r).toBe(BAD);
        expect(r).not.toBe(BAD);
        expect((r as DatasetRecord).aliases).toEqual(unique);
        expect(merged).toBe(unique.length === items.length ? 0 : 1);
      }),
      { numRuns: 1500 },
    );
  });

  it('empty_is_null, with and without transforms, from a column, columns or a template', () => {
    const source = fc.constantFrom({ column: 'A' }, { columns: ['A', 'B'], separator: '-' }, { template: '{A}{B}' });
    const transforms = fc.constantFrom([], ['trim'], ['boolean'], [{ default: 'd' }], [{ null_words: ['x'] }]);
    fc.assert(
      fc.property(source, transforms, fc.boolean(), cell, cell, (src, tr, emptyIsNull, a, b) => {
        const { r, errors } = mapRow({ 'attributes.v': { ...src, transforms: tr, empty_is_null: emptyIsNull } }, ['S1', '', a, b]);
        // The plain definition: the source's value; empty → null when asked; the transforms; an empty result → null when asked.
        let v: Value = 'column' in src ? a : 'columns' in src ? [a.trim(), b.trim()].filter((s) => s !== '').join('-') : `${a}${b}`.trim();
        if (emptyIsNull && typeof v === 'string' && v.trim() === '') v = null;
        let want: Value | 'error' = v;
        for (const t of tr) if (want !== 'error') want = outcome(compileTransform(transformSchema.parse(t)), want);
        if (want !== 'error' && emptyIsNull && (want === '' || want === null)) want = null;
        if (want === 'error') {
          expect(r).toBe(BAD);
          expect(errors.map((e) => [e.line, e.column, e.code])).toEqual([[2, 'column' in src ? 'A' : 'attributes.v', 'INVALID_BOOLEAN']]);
        } else {
          expect(errors).toEqual([]);
          expect((r as DatasetRecord).attributes.v).toEqual(want);
        }
      }),
      { numRuns: 3000 },
    );
  });
});
