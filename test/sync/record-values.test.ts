import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/model/canonical.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { recordJson } from '../../src/model/record-json.js';
import { RecordValues, ValueFlagsWriter, ZEROABLE } from '../../src/sync/core/record-values.js';
import { baseFlags, ValueTallier, type ValueRule } from '../../src/sync/core/value-guards.js';

/** Issue 18: the value guards read a compared record's values from its JSON text; the tally must be the parse's. */

// Values the guards tell apart: zeros of every kind (full-width too), empties, numbers as text, escapes, nesting.
const tricky = fc.constantFrom('0', '０', ' 0 ', '', '  ', '-0', '0.0', '1e3', '12', '-5', 'abc', 'a"b', 'x\\y', '\n', 'é', '\u2028', '\ud800', '0x10', 'Infinity');
const scalar = fc.oneof(tricky, fc.string(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer(), fc.constantFrom(0, -0, 1e21, 5e-324), fc.boolean(), fc.constant(null));
const nested = fc.oneof(fc.array(scalar, { maxLength: 3 }), fc.dictionary(fc.string(), scalar, { maxKeys: 2 }));
const value = fc.oneof({ weight: 6, arbitrary: scalar }, { weight: 1, arbitrary: nested });
const record = fc.record(
  {
    record_id: fc.string({ minLength: 1 }),
    display_name: fc.oneof(tricky, fc.string()),
    api_value: fc.oneof(tricky, fc.string()),
    aliases: fc.array(fc.oneof(tricky, fc.string()), { maxLength: 3 }),
    attributes: fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('stock', 'price', '__proto__', '10', 'a"b', 'a\\b')), value, { maxKeys: 5 }),
    active: fc.oneof(fc.boolean(), tricky),
  },
  { requiredKeys: ['record_id', 'attributes'] },
);
const rules = fc.constantFrom<ValueRule[]>(
  [{ field: '*', max_zeroed_ratio: 0.25, jump_factor: 10, max_jump_ratio: 0.25, min_compared: 20, min_all_compared: 3 }],
  [{ field: 'attributes.stock', max_zeroed_ratio: 0.1, min_compared: 1 }, { field: 'display_name', max_changed_ratio: 0.5, min_compared: 1 }],
  [{ field: 'attributes.__proto__', max_zeroed_ratio: 0.1, min_compared: 1 }, { field: '*', jump_percent: 50, max_jump_ratio: 0.1, min_compared: 1 }],
);

function tallies(texts: string[], rs: ValueRule[]): [unknown, unknown] {
  const slow = new ValueTallier(rs);
  const fast = new ValueTallier(rs);
  for (const t of texts) {
    slow.compared(JSON.parse(t) as DatasetRecord);
    fast.comparedJson(t);
  }
  // A changed record too, so that the bases land in fields with a tally.
  const all = texts.map((t) => JSON.parse(t) as DatasetRecord);
  for (let i = 1; i < all.length; i++) {
    slow.observe(all[i - 1]!, all[i]!);
    fast.observe(all[i - 1]!, all[i]!);
  }
  return [slow.tally(), fast.tally()];
}

describe('value guards read from the JSON text (record-values.ts)', () => {
  it('tally exactly as parsing each record whole, for canonical record JSON', () => {
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 8 }), rules, (recs, rs) => {
        const texts = recs.map((r) => recordJson(r as DatasetRecord));
        const [slow, fast] = tallies(texts, rs);
        expect(fast).toEqual(slow);
      }),
      { numRuns: 400 },
    );
  });

  it('reads canonical JSON itself (no fallback unless index-like keys), each value flagged as baseFlags flags the parsed value', () => {
    fc.assert(
      fc.property(fc.array(record, { minLength: 1, maxLength: 4 }), (recs) => {
        // One reader for several records, as the diff uses it (it takes keys again from the record before).
        const rv = new RecordValues(baseFlags);
        for (const r of recs) {
          const text = canonicalJson(r);
          if (!rv.read(text)) {
            // JavaScript puts index-like keys first whatever the sort, so such text is not in key order: parsed instead.
            expect(Object.keys(r.attributes).some((k) => /^(?:0|[1-9][0-9]*)$/.test(k))).toBe(true);
            continue;
          }
          const parsed = JSON.parse(text) as Record<string, unknown>;
          const attrs = parsed['attributes'] as Record<string, unknown>;
          expect(rv.attrKeys.slice(0, rv.attrCount).sort()).toEqual(Object.keys(attrs).sort());
          for (let i = 0; i < rv.attrCount; i++) expect([rv.attrKeys[i], rv.attrFlags[i]]).toEqual([rv.attrKeys[i], baseFlags(attrs[rv.attrKeys[i]!])]);
          expect(rv.topKeys.slice(0, rv.topCount).sort()).toEqual(Object.keys(parsed).filter((k) => k !== 'attributes').sort());
          for (let i = 0; i < rv.topCount; i++) expect([rv.topKeys[i], rv.topFlags[i]]).toEqual([rv.topKeys[i], baseFlags(parsed[rv.topKeys[i]!])]);
        }
      }),
      { numRuns: 400 },
    );
  });

  it('text starting with an ASCII letter is never zero, empty or a number, whatever follows (its shortcut)', () => {
    const letter = fc.constantFrom(...'abcdefxyzABEINXZ');
    fc.assert(
      fc.property(letter, fc.string({ unit: 'binary' }), (l, rest) => {
        expect(baseFlags(l + rest)).toBe(ZEROABLE);
        const rv = new RecordValues(baseFlags);
        expect(rv.read(JSON.stringify({ attributes: { a: l + rest } }))).toBe(true);
        expect(rv.attrFlags[0]).toBe(ZEROABLE);
      }),
      { numRuns: 150 },
    );
    for (const s of ['Infinity', 'NaN', 'e1', 'x10', 'I\u0301nfinity', 'a０']) expect(baseFlags(s)).toBe(ZEROABLE);
  });

  it('leaves text in any other shape to the parse: whitespace, repeated or unsorted keys, attributes not an object, bad numbers', () => {
    const odd = [
      '{ "active": true, "attributes": {"stock": 0} }',
      '{"active":true,"active":false,"attributes":{}}',
      '{"attributes":{"stock":5,"stock":0}}',
      '{"attributes":{"b":1,"a":0}}',
      '{"attributes":["0",0]}',
      '{"attributes":"zero"}',
      '{"attributes":null,"display_name":"0"}',
      '{"attributes":{"n":01}}',
      '{"attributes":{"n":1.}}',
      '{"attributes":{"n":-}}',
      '{"attributes":{"n":1}}x',
    ];
    const rs: ValueRule[] = [{ field: '*', max_zeroed_ratio: 0.25, jump_factor: 10, max_jump_ratio: 0.25, min_compared: 1 }];
    const rv = new RecordValues(baseFlags);
    for (const t of odd) {
      expect(rv.read(t)).toBe(false);
      let parsed = true;
      try {
        JSON.parse(t);
      } catch {
        parsed = false;
      }
      if (!parsed) {
        expect(() => new ValueTallier(rs).comparedJson(t)).toThrow(SyntaxError);
        continue;
      }
      const [slow, fast] = tallies([t, '{"attributes":{"stock":1},"display_name":"x","active":true}'], rs);
      expect(fast).toEqual(slow);
    }
  });

  it('flags written from the mapped record count exactly as its JSON text read back, values JSON changes too (not finite, undefined, -0)', () => {
    // Values as a mapping may give them, before they are text: JSON writes a number that is not finite as null and leaves undefined out.
    const raw = fc.oneof(value, fc.constantFrom(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, undefined, -0, [undefined], { a: undefined }));
    const mapped = fc.record(
      {
        record_id: fc.string({ minLength: 1 }),
        display_name: fc.oneof(tricky, fc.string(), fc.constant(undefined)),
        api_value: fc.oneof(tricky, fc.string(), fc.constantFrom(Number.NaN, null)),
        aliases: fc.array(fc.oneof(tricky, fc.string()), { maxLength: 3 }),
        attributes: fc.dictionary(fc.oneof(fc.string(), fc.constantFrom('stock', 'price', '__proto__', '10', 'a"b', 'toJSON')), raw, { maxKeys: 5 }),
        active: fc.oneof(fc.boolean(), tricky),
      },
      { requiredKeys: ['record_id', 'attributes'] },
    );
    fc.assert(
      fc.property(fc.array(mapped, { minLength: 1, maxLength: 8 }), rules, (recs, rs) => {
        // One writer for all, as one sort uses it: records of the same keys share a shape.
        const writer = new ValueFlagsWriter(baseFlags);
        const fromText = new ValueTallier(rs);
        const fromFlags = new ValueTallier(rs);
        for (const r of recs as DatasetRecord[]) {
          const text = recordJson(r);
          const flags = writer.of(r);
          // Only a key named toJSON (it could be a function) sends a record to its text.
          expect(flags === undefined).toBe(Object.keys(r.attributes).includes('toJSON'));
          fromText.comparedJson(text);
          if (flags === undefined) fromFlags.comparedJson(text);
          else expect(fromFlags.comparedFlags(flags, writer.shapes)).toBe(true);
        }
        // Every field of every record changed once, so that the tally shows the base of each.
        for (const r of recs) {
          const after = JSON.parse(recordJson(r as DatasetRecord)) as DatasetRecord;
          const empty = { record_id: after.record_id, attributes: {} } as unknown as DatasetRecord;
          fromText.observe(empty, after);
          fromFlags.observe(empty, after);
        }
        expect(fromFlags.tally()).toEqual(fromText.tally());
      }),
      { numRuns: 400 },
    );
  });

  it('gives each record of a shape the flags a new writer gives it, however many records share them (its texts kept per flags code)', () => {
    // One shape (the same keys, in the same order), values drawn from few kinds so that flags repeat; 30 keys pass the coded limit.
    const few = fc.constantFrom<unknown>('0', '', 'abc', 5, 0, -2, null, [], ['x'], undefined, Number.NaN);
    fc.assert(
      fc.property(fc.constantFrom(['stock'], ['b', 'a', 'c'], Array.from({ length: 30 }, (_, i) => `k${i}`)), fc.array(fc.array(few, { minLength: 34, maxLength: 34 }), { minLength: 1, maxLength: 40 }), (keys, rows) => {
        const shared = new ValueFlagsWriter(baseFlags);
        for (const vs of rows) {
          const attributes = Object.fromEntries(keys.map((k, i) => [k, vs[i]]));
          const r = { record_id: 'r', display_name: vs[30], api_value: vs[31], aliases: vs[32] === null ? [] : ['a'], attributes, active: vs[33] === 0 } as unknown as DatasetRecord;
          expect(shared.of(r)).toBe(new ValueFlagsWriter(baseFlags).of(r));
        }
      }),
      { numRuns: 200 },
    );
  });

  it('flags of another writer, or not flags, count nothing and say so (the text is read instead)', () => {
    const rs: ValueRule[] = [{ field: '*', max_zeroed_ratio: 0.25, min_compared: 1 }];
    const writer = new ValueFlagsWriter(baseFlags);
    const flags = writer.of({ record_id: 'a', display_name: 'x', api_value: 'y', aliases: [], attributes: { stock: 5 }, active: true })!;
    expect(flags).toBe('0.11013');
    const tallier = new ValueTallier(rs);
    for (const bad of ['1.11013', '0.1101', '0.110133', '0.1101x', '.11013', 'x', '']) expect(tallier.comparedFlags(bad, writer.shapes)).toBe(false);
    expect(tallier.comparedFlags(flags, [])).toBe(false);
    tallier.observe({ record_id: 'a', display_name: 'x', api_value: 'y', aliases: [], attributes: { stock: 5 }, active: true }, { record_id: 'a', display_name: 'x', api_value: 'y', aliases: [], attributes: { stock: 0 }, active: true });
    expect(tallier.tally().fields['attributes.stock']).toMatchObject({ zeroable: 0, nonzero: 0 });
    expect(tallier.comparedFlags(flags, writer.shapes)).toBe(true);
    expect(tallier.tally().fields['attributes.stock']).toMatchObject({ zeroable: 1, nonzero: 1 });
  });
});
