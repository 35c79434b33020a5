import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { KeyIndex } from '../../src/sources/key-index.js';

describe('KeyIndex', () => {
  it('finds exactly the keys seen before, with their first line, through growth of table and arena', () => {
    const idx = new KeyIndex();
    // One expect over the lot: 200,000 expect() calls cost seconds of matcher overhead, not of the index.
    const seenBefore: number[] = [];
    for (let i = 1; i <= 200_000; i++) if (idx.add(`SKU-${i}-${'x'.repeat(i % 7)}`, i) !== 0) seenBefore.push(i);
    expect(seenBefore).toEqual([]);
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

  it('keeps long keys (a length past one byte) and non-ASCII keys apart exactly', () => {
    const idx = new KeyIndex();
    const keys = ['a'.repeat(254), 'a'.repeat(255), 'a'.repeat(256), 'a'.repeat(300), 'é'.repeat(127), 'é'.repeat(128), 'é'.repeat(200), '髙'.repeat(100), 'a'.repeat(254) + 'b'];
    keys.forEach((k, i) => expect(idx.add(k, i + 1)).toBe(0));
    keys.forEach((k, i) => expect(idx.add(k, 100 + i)).toBe(i + 1));
  });

  it('agrees with a Map on long and mixed keys', () => {
    const key = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 3 }), fc.string({ minLength: 250, maxLength: 260 }), fc.constantFrom('x'.repeat(255), 'é'.repeat(128)));
    fc.assert(
      fc.property(fc.array(key, { maxLength: 60 }), (keys) => {
        const idx = new KeyIndex();
        const map = new Map<string, number>();
        keys.forEach((k, i) => {
          const expected = map.get(k) ?? 0;
          if (!map.has(k)) map.set(k, i + 1);
          expect(idx.add(k, i + 1)).toBe(expected);
        });
      }),
      { numRuns: 200 },
    );
  });
});
