import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { unescapeXstring } from '../../src/sources/xlsx/cell-text.js';
import { ListedStrings, SharedStrings } from '../../src/sources/xlsx/shared-strings.js';

/**
 * Issue 18: the shared strings table keeps its items as UTF-8 bytes in one arena and makes each a string when a
 * cell asks for it, kept from its second use on. Whatever the items and however often and in whatever order the
 * cells ask, it must give what a list of the strings gives (ListedStrings, the table as it was).
 */

// Items of every sort: ASCII, non-ASCII, astral, escapes (one that makes a lone surrogate), empty, long.
const ITEM = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc.array(fc.constantFrom('a', 'Z', '_', '_x000D_', '_xD800_', '_x005F_x', '髙', 'é', '😀', ' ', '\ud800'), { maxLength: 6 }).map((p) => p.join('')),
  fc.constantFrom('', 'x'.repeat(70), '髙'.repeat(30)),
);

/** How an item goes into the table: as text (the scanner's), or as the part's bytes (the fast path's) when UTF-8 keeps it. */
const ENTRY = fc.tuple(ITEM, fc.boolean());

function build(entries: ReadonlyArray<readonly [string, boolean]>): { table: SharedStrings; expected: string[] } {
  const table = new SharedStrings();
  const expected: string[] = [];
  for (const [item, asBytes] of entries) {
    const bytes = Buffer.from(`<si><t>${item}</t></si>`);
    if (asBytes && Buffer.from(item).toString() === item) {
      // As the fast path hands them on: the item's bytes within the part's, with what it noted of them.
      const from = Buffer.byteLength('<si><t>');
      const to = from + Buffer.byteLength(item);
      table.addBytes(bytes, from, to, Buffer.byteLength(item) !== item.length, item.includes('_'));
      expected.push(unescapeXstring(item));
    } else {
      const text = unescapeXstring(item);
      table.addText(text);
      expected.push(text);
    }
  }
  return { table, expected };
}

describe('XLSX shared strings table: what a list of its strings gives', () => {
  it('for any items, asked for in any order, any number of times', () => {
    fc.assert(
      fc.property(fc.array(ENTRY, { maxLength: 40 }), fc.array(fc.nat(), { maxLength: 120 }), (entries, asks) => {
        const { table, expected } = build(entries);
        const listed = new ListedStrings(expected);
        expect(table.length).toBe(expected.length);
        for (const a of asks) {
          const i = expected.length > 0 ? a % (expected.length + 2) : a % 2;
          expect(table.get(i)).toBe(listed.get(i));
          expect(table.get(i)).toBe(expected[i]);
        }
        // Every item at the end, once more (some made strings by then, some not).
        for (let i = 0; i < expected.length; i++) expect(table.get(i)).toBe(expected[i]);
      }),
      { numRuns: 300 },
    );
  });

  it('has nothing where a cell index is not one of its items, as an array has not', () => {
    const { table, expected } = build([
      ['a', true],
      ['b', false],
    ]);
    for (const i of [-1, 2, 1.5, NaN, Infinity, -Infinity, 2 ** 32, 2 ** 32 + 1, -0]) {
      expect(table.get(i)).toBe(expected[i]);
      expect(new ListedStrings(expected).get(i)).toBe(expected[i]);
    }
  });

  it('keeps items past its first arena and index sizes, and long ones copied whole', () => {
    const items = Array.from({ length: 10_000 }, (_, i) => (i % 3 === 0 ? `SKU-${i}` : i % 3 === 1 ? `髙島屋 ${i}` : `${'long '.repeat(20)}${i}`));
    const { table, expected } = build(items.map((s, i) => [s, i % 2 === 0] as const));
    expect(Array.from({ length: table.length }, (_, i) => table.get(i))).toEqual(expected);
    expect(Array.from({ length: table.length }, (_, i) => table.get(i))).toEqual(expected);
  });
});
