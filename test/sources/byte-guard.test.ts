import { describe, expect, it } from 'vitest';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import iconv from 'iconv-lite';
import { sourceConfigSchema } from '../../src/sources/config.js';
import { mappingConfigSchema } from '../../src/mapping/config.js';
import { readExportFile } from '../../src/sources/read.js';
import { readText, simpleMapping, tempDir } from './helpers.js';

// Same class as issue 11: bytes a careless read would publish garbled or with rows silently lost.
const rows = (n: number) => Array.from({ length: n }, (_, i) => `A-${i + 1},name ${i + 1},c${i + 1}\n`).join('');

async function readChunked(bytes: Buffer, source: Record<string, unknown>, chunk_bytes: number) {
  const file = join(await tempDir(), 'x.csv');
  await writeFile(file, bytes);
  return readExportFile(file, sourceConfigSchema.parse({ type: 'csv', ...source }), mappingConfigSchema.parse(simpleMapping), { chunk_bytes });
}

describe('NUL bytes anywhere in a CSV', () => {
  it('a zero-filled block in the middle (a crash while written) refuses the file naming its line, even with skip_rows', async () => {
    const text = `SKU,Name,Code\n${rows(40)}`;
    const at = text.indexOf('A-12,');
    const bytes = Buffer.from(text);
    bytes.fill(0, at + 5, at + 5 + 120);
    for (const chunk_bytes of [7, 64 * 1024]) {
      const r = await readChunked(bytes, { on_row_errors: 'skip_rows', max_bad_row_ratio: 0.5 }, chunk_bytes);
      expect(r.rejected).toMatchObject({ code: 'MALFORMED_CSV', context: { line: 13 } });
      expect(r.records).toEqual([]);
    }
  });

  it('a zero-filled tail after the last row is refused too', async () => {
    const r = await readText(Buffer.concat([Buffer.from(`SKU,Name,Code\n${rows(3)}`), Buffer.alloc(4096)]), { on_row_errors: 'skip_rows', max_bad_row_ratio: 0.5 });
    expect(r.rejected).toMatchObject({ code: 'MALFORMED_CSV', context: { line: 5 } });
  });

  it('UTF-16 text (NUL bytes in its encoding) still reads', async () => {
    const r = await readText(iconv.encode(`\uFEFFSKU,Name,Code\n${rows(2)}`, 'utf-16le'), { encoding: 'utf-16le' });
    expect(r.rejected).toBeNull();
    expect(r.records).toHaveLength(2);
  });
});

describe('UTF-8 text under a legacy encoding', () => {
  const japanese = 'SKU,Name,Code\nJ-1,緑茶 ５００ｍｌ,tea\nJ-2,ﾊﾝｶｸ カナ,kana\n';

  it('is refused (BAD_ENCODING) where every byte decodes, instead of published as mojibake (お茶 as 縺願幻, Müller as Mﾃｼller)', async () => {
    // Each of these UTF-8 texts is valid in the legacy encoding too: nothing but the guard notices.
    const cases: Array<[string, string]> = [
      ['cp932', 'SKU,Name,Code\nJ-1,お茶,tea\nJ-2,東京 醤油,soy\nJ-3,牛乳,milk\n'],
      ['shift_jis', 'SKU,Name,Code\nJ-1,お茶,tea\n'],
      ['euc-jp', 'SKU,Name,Code\nD-1,Müller Brot,bread\nD-2,café,coffee\n'],
      ['euc-kr', 'SKU,Name,Code\nD-1,Müller Brot,bread\nD-2,緑茶,tea\n'],
    ];
    for (const [encoding, text] of cases) {
      for (const chunk_bytes of [1, 64 * 1024]) {
        const r = await readChunked(Buffer.from(text), { encoding }, chunk_bytes);
        expect([encoding, chunk_bytes, r.rejected?.code]).toEqual([encoding, chunk_bytes, 'BAD_ENCODING']);
        expect(r.rejected?.message).toMatch(/is UTF-8 text.*set encoding: utf-8/);
      }
    }
  });

  it('where the legacy decoder meets invalid bytes in UTF-8 text, the refusal says to set utf-8', async () => {
    for (const encoding of ['cp932', 'euc-jp', 'euc-kr']) {
      const r = await readChunked(Buffer.from(japanese), { encoding }, 64 * 1024);
      expect(r.rejected?.code).toBe('BAD_ENCODING');
      expect(r.rejected?.message).toMatch(/set encoding: utf-8/);
    }
  });

  it('a UTF-8 byte order mark under cp932 is refused from the first bytes', async () => {
    const r = await readText(Buffer.from(`\uFEFF${japanese}`), { encoding: 'cp932' });
    expect(r.rejected).toMatchObject({ code: 'BAD_ENCODING', context: { setting: 'encoding' } });
  });

  it('real cp932 and EUC-JP text reads, and so does ASCII-only text under cp932', async () => {
    for (const encoding of ['cp932', 'euc-jp'] as const) {
      const r = await readText(iconv.encode(japanese, encoding), { encoding });
      expect(r.rejected).toBeNull();
      expect(r.records.map((x) => x.display_name)).toEqual(['緑茶 ５００ｍｌ', 'ﾊﾝｶｸ カナ']);
    }
    expect((await readText(`SKU,Name,Code\n${rows(3)}`, { encoding: 'cp932' })).records).toHaveLength(3);
  });
});
