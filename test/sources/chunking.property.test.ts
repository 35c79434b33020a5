import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import iconv from 'iconv-lite';
import { sourceConfigSchema } from '../../src/sources/config.js';
import { mappingConfigSchema } from '../../src/mapping/config.js';
import { readExportFile } from '../../src/sources/read.js';
import { tempDir } from './helpers.js';

// Characters every tested encoding can carry, with the CSV specials, multi-byte
// characters whose bytes chunk boundaries will split, and CP932 trail bytes of 0x5C (表, ソ).
const CP932_SAFE = [...'aZ09 -,;"\'\t\r\n髙①㈱テスト表示ソ能ｶﾅ'];
const WIDE = [...CP932_SAFE, 'é', '😀', '한'];

function csvCell(s: string): string {
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const mapping = mappingConfigSchema.parse({
  fields: { record_id: { column: 'Id' }, display_name: 'Name', api_value: 'Id', 'attributes.note': 'Note' },
});

describe('decoding and parsing do not depend on chunk boundaries', () => {
  for (const encoding of ['utf-8', 'cp932', 'utf-16le', 'euc-kr'] as const) {
    it(`${encoding}: same records and lines for any chunk size`, async () => {
      const dir = await tempDir();
      const chars = encoding === 'cp932' ? CP932_SAFE : encoding === 'euc-kr' ? [...'aZ09 -,"\r\n한국어é'].filter((c) => c !== 'é') : WIDE;
      const text = fc.array(fc.constantFrom(...chars), { minLength: 1, maxLength: 12 }).map((a) => a.join(''));
      let n = 0;
      await fc.assert(
        fc.asyncProperty(fc.array(fc.tuple(text, text), { minLength: 1, maxLength: 15 }), fc.integer({ min: 1, max: 17 }), fc.boolean(), async (rows, chunk, crlf) => {
          const nl = crlf ? '\r\n' : '\n';
          const body = rows.map(([name, note], i) => [`id-${i}`, csvCell(name), csvCell(note)].join(',')).join(nl);
          const textOut = `${encoding === 'utf-16le' ? '\uFEFF' : ''}Id,Name,Note${nl}${body}${nl}`;
          const file = join(dir, `f${n++}.csv`);
          await writeFile(file, encoding === 'utf-8' ? Buffer.from(textOut) : iconv.encode(textOut, encoding));
          const source = sourceConfigSchema.parse({ type: 'csv', encoding, on_row_errors: 'skip_rows', max_bad_row_ratio: 1 });
          const whole = await readExportFile(file, source, mapping);
          const small = await readExportFile(file, source, mapping, { chunk_bytes: chunk });
          expect(small.rejected).toBeNull();
          expect(small.records).toEqual(whole.records);
          expect(small.lines).toEqual(whole.lines);
          expect(small.row_errors).toEqual(whole.row_errors);
          expect(small.sha256).toEqual(whole.sha256);
          // and the records are what was written (names that trim to nothing are row errors instead)
          const expected = rows.map(([name, note], i) => ({ id: `id-${i}`, name, note })).filter((r) => r.name.length > 0);
          expect(whole.records.map((r) => ({ id: r.record_id, name: r.display_name, note: r.attributes.note }))).toEqual(expected);
        }),
        { numRuns: 40 },
      );
    });
  }
});
