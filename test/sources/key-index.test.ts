import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { KeyIndex } from '../../src/sources/key-index.js';

describe('KeyIndex', () => {
  it('finds exactly the keys seen before, with their first line, through growth of table and arena', () => {
    const idx = new KeyIndex();
    for (let i = 1; i <= 200_000; i++) expect(idx.add(`SKU-${i}-${'x'.repeat(i % 7)}`, i)).toBe(0);
    expect(idx.add('SKU-77-', 999_999)).toBe(77);
    expect(idx.add('SKU-77', 999_999)).toBe(0);
  });

  it('agrees with a Map on any sequence of keys', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme', maxLength: 6 }), { maxLength: 300 }), (keys) => {
        const idx = new KeyIndex();
        const map = new Map<string, number>();
        keys.forEach((k, i) => {
          const expected = map.get(k) ?? 0;
          if (!map.has(k)) map.set(k, i + 1);
          expect(idx.add(k, i + 1)).toBe(expected);
        });
      }),
    );
  });
});
