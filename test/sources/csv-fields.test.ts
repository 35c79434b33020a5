import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parse as parseSync } from 'csv-parse/sync';
import { Parser } from 'csv-parse';
import { decodeFieldsInPlace } from '../../src/sources/csv.js';

/** Parse `input` with a stream Parser (optionally with the in-place field decoding), fed in `chunk`-byte pieces. */
function parseWith(input: string, fast: boolean, chunk: number, options: Record<string, unknown> = {}): Promise<string[][]> {
  const parser = new Parser({ relax_column_count: true, relax_quotes: true, bom: true, ...options });
  if (fast) expect(decodeFieldsInPlace(parser)).toBe(true);
  const rows: string[][] = [];
  parser.on('data', (r: string[]) => rows.push(r));
  return new Promise((resolve, reject) => {
    parser.on('error', reject);
    parser.on('end', () => resolve(rows));
    const bytes = Buffer.from(input, 'utf8');
    for (let i = 0; i < bytes.length; i += chunk) parser.write(bytes.subarray(i, i + chunk));
    parser.end();
  });
}

describe('csv-parse field decoding in place', () => {
  it('applies to the installed csv-parse (a version that changed its internals would make this fail, not the reads slower unnoticed)', () => {
    expect(decodeFieldsInPlace(new Parser({}))).toBe(true);
  });

  it('gives the same rows as csv-parse as it comes, for any text and chunking', async () => {
    const cell = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 8 }), fc.constantFrom('', 'a,b', 'say "hi"', 'x\r\ny', '髙①㈱', '\uFEFF'));
    const csv = fc.array(fc.array(cell, { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 8 }).map((rows) =>
      rows.map((r) => r.map((c) => (/[",\r\n]/.test(c) ? `"${c.replace(/"/g, '""')}"` : c)).join(',')).join('\r\n'),
    );
    await fc.assert(
      fc.asyncProperty(csv, fc.integer({ min: 1, max: 40 }), async (text, chunk) => {
        const want = parseSync(text, { relax_column_count: true, relax_quotes: true, bom: true });
        expect(await parseWith(text, true, chunk)).toEqual(want);
      }),
      { numRuns: 300 },
    );
  });

  it('keeps the BOM check working (it reads the field buffer without an encoding)', async () => {
    expect(await parseWith('\uFEFFSKU,Name\nA-1,x\n', true, 2)).toEqual([
      ['SKU', 'Name'],
      ['A-1', 'x'],
    ]);
  });
});
