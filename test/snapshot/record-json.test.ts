import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, numberText, sha256, text } from '../../src/model/canonical.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { inRecordOrder, parsesBackAs, recordJson, textHash } from '../../src/model/record-json.js';

const value = fc.oneof(fc.string(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.boolean(), fc.constant(null));
const record = fc.record({
  record_id: fc.string({ minLength: 1 }),
  display_name: fc.string({ unit: 'binary' }),
  api_value: fc.string(),
  aliases: fc.array(fc.string({ unit: 'grapheme' }), { maxLength: 4 }),
  attributes: fc.dictionary(fc.oneof(fc.string(), fc.nat(99).map(String)), value, { maxKeys: 6 }), // integer-like keys order first in JSON
  active: fc.boolean(),
});

describe('recordJson', () => {
  it('is exactly canonicalJson for records, so hashes in the snapshot stay comparable', () => {
    fc.assert(
      fc.property(record, (r) => {
        expect(recordJson(r as DatasetRecord)).toBe(canonicalJson(r));
        expect(textHash(recordJson(r as DatasetRecord))).toBe(sha256(canonicalJson(r)));
      }),
      { numRuns: 500 },
    );
  });
  it('is canonicalJson for runs of records sharing attribute keys, in any insertion order (its sorted-key cache)', () => {
    const keys = fc.uniqueArray(fc.oneof(fc.constantFrom('a', 'b', 'Z', '_', '10', '2', 'stock'), fc.string()), { maxLength: 5 });
    fc.assert(
      fc.property(keys, fc.array(fc.tuple(fc.func(fc.integer()), value, fc.string()), { minLength: 1, maxLength: 6 }), (ks, rows) => {
        for (const [order, v, s] of rows) {
          const shuffled = [...ks].sort((x, y) => order(x) - order(y) || (x < y ? -1 : 1));
          const attributes = Object.fromEntries(shuffled.map((k, i) => [k, i % 2 ? v : s]));
          const r = { record_id: 'r', display_name: s, api_value: 'v', aliases: [s, '"\\'], attributes, active: true };
          expect(recordJson(r as DatasetRecord)).toBe(canonicalJson(r));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('writes any text as JSON.stringify does, short (checked a character at a time) or long (by its regex)', () => {
    // Quotes, backslashes, control characters, lone and paired surrogates, at every length around the switch (64).
    const char = fc.oneof(fc.constantFrom('"', '\\', '\u0000', '\n', '\u001f', '\u007f', '\ud800', '\udfff', '\ud83d\ude00', '\u2028', 'é', '表'), fc.string({ unit: 'binary', maxLength: 1 }), fc.constant('a'));
    fc.assert(
      fc.property(fc.array(char, { maxLength: 80 }), fc.integer({ min: 0, max: 70 }), (cs, pad) => {
        const s = 'x'.repeat(pad) + cs.join('');
        expect(text(s)).toBe(JSON.stringify(s));
      }),
      { numRuns: 1000 },
    );
  });

  it('writes numbers as JSON.stringify does, the same fraction met again (its kept text) or not, -0 and 0 alike', () => {
    const pool = fc.constantFrom(0, -0, 0.1, -2.5, 9.99, 12.5, 1e21, 1e-7, 5e-324, Number.MAX_VALUE, 2 ** 53, 0.30000000000000004);
    fc.assert(
      fc.property(fc.array(fc.oneof(pool, fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer()), { maxLength: 30 }), (ns) => {
        for (const n of [...ns, ...ns]) {
          expect(numberText(n)).toBe(JSON.stringify(n));
          const r = { record_id: 'r', display_name: 'n', api_value: 'v', aliases: [], attributes: { price: n, stock: -n }, active: true };
          // canonicalJson of a whole record takes the generic path (JSON.stringify of a sorted copy), not the kept texts.
          expect(recordJson(r as DatasetRecord)).toBe(canonicalJson(r));
        }
      }),
      { numRuns: 300 },
    );
  });

  it('keeps an attribute named __proto__ as a key, in both writers (A6 allows the name)', () => {
    const attributes = JSON.parse('{"__proto__":"x","b":1}') as Record<string, unknown>;
    const r = { record_id: 'r', display_name: 'n', api_value: 'v', aliases: [], attributes, active: true };
    const expected = '{"active":true,"aliases":[],"api_value":"v","attributes":{"__proto__":"x","b":1},"display_name":"n","record_id":"r"}';
    expect(canonicalJson(r)).toBe(expected);
    expect(recordJson(r as DatasetRecord)).toBe(expected);
  });

  it('falls back to canonicalJson for other shapes', () => {
    const odd = [
      { record_id: 'a', display_name: 'x', api_value: 'y', aliases: [], attributes: { n: { deep: 1 } }, active: true },
      { record_id: 'a', display_name: 'x', api_value: 'y', aliases: [], attributes: { u: undefined }, active: true },
      { record_id: 'a', display_name: 'x', api_value: 'y', aliases: [], attributes: {}, active: true, extra: 1 },
      { record_id: 'a', display_name: undefined, api_value: 'y', aliases: [], attributes: {}, active: true },
      { record_id: 'a', display_name: 'x', api_value: 'y', aliases: [1, null], attributes: {}, active: true },
      { record_id: 'a', display_name: 7, api_value: 'y', aliases: [], attributes: { n: Number.NaN, i: -0, e: 1e21, s: 'a\u2028\ud800' }, active: 'yes' },
    ];
    for (const r of odd) expect(recordJson(r as unknown as DatasetRecord)).toBe(canonicalJson(r));
  });

  it('parsesBackAs only a record that JSON.parse of its recordJson gives back key for key, in the same order', () => {
    // Records in canonical key order (as a merge makes them from the snapshot's parse), with attributes in any order.
    const canonical = record.chain((r) =>
      fc.func(fc.integer()).map((order) => {
        const keys = Object.keys(r.attributes).sort((x, y) => order(x) - order(y) || (x < y ? -1 : 1));
        const attributes = Object.fromEntries(keys.map((k) => [k, r.attributes[k]]));
        return { active: r.active, aliases: r.aliases, api_value: r.api_value, attributes, display_name: r.display_name, record_id: r.record_id };
      }),
    );
    let yes = 0;
    fc.assert(
      // …and records as a mapping makes them (record_id first), put in recordJson's order (inRecordOrder).
      fc.property(fc.oneof(canonical, record, record.map((r) => inRecordOrder(r as DatasetRecord)!)), (r) => {
        const back = JSON.parse(recordJson(r as DatasetRecord)) as unknown;
        // JSON.stringify keeps key order: equal text is equal keys, order and values (a -0 would pass: it is refused).
        const same = JSON.stringify(back) === JSON.stringify(r) && Object.getPrototypeOf((r as DatasetRecord).attributes) === Object.prototype;
        if (parsesBackAs(r as DatasetRecord)) {
          yes++;
          expect(same).toBe(true);
          expect(back).toStrictEqual(r);
        }
      }),
      { numRuns: 1000 },
    );
    expect(yes).toBeGreaterThan(50); // it is not simply always false
    const r = { active: true, aliases: [], api_value: 'v', attributes: { a: 1, b: 'x' }, display_name: 'n', record_id: 'r' };
    expect(parsesBackAs(r as DatasetRecord)).toBe(true);
    expect(inRecordOrder({ ...r, extra: 1 } as unknown as DatasetRecord)).toBeNull();
    for (const odd of [{ ...r, attributes: { b: 'x', a: 1 } }, { ...r, attributes: { a: -0 } }, { ...r, attributes: { '1': 1 } }, { ...r, extra: 1 }, { record_id: 'r', active: true, aliases: [], api_value: 'v', attributes: {}, display_name: 'n' }, { ...r, attributes: { a: { deep: 1 } } }])
      expect(parsesBackAs(odd as unknown as DatasetRecord)).toBe(false);
  });
});
