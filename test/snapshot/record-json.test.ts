import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, sha256 } from '../../src/model/canonical.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { recordJson, textHash } from '../../src/snapshot/record-json.js';

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
  it('falls back to canonicalJson for other shapes', () => {
    const odd = [
      { record_id: 'a', display_name: 'x', api_value: 'y', aliases: [], attributes: { n: { deep: 1 } }, active: true },
      { record_id: 'a', display_name: 'x', api_value: 'y', aliases: [], attributes: { u: undefined }, active: true },
      { record_id: 'a', display_name: 'x', api_value: 'y', aliases: [], attributes: {}, active: true, extra: 1 },
      { record_id: 'a', display_name: undefined, api_value: 'y', aliases: [], attributes: {}, active: true },
    ];
    for (const r of odd) expect(recordJson(r as unknown as DatasetRecord)).toBe(canonicalJson(r));
  });
});
