import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdir, readdir, readlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import iconv from 'iconv-lite';
import { readText, tempDir, simpleMapping } from './helpers.js';
import { makeZip } from './xlsx-parts.js';
import { readSource } from '../../src/sync/executor/source-read.js';
import { sourceConfigSchema } from '../../src/sources/config.js';
import { mappingConfigSchema } from '../../src/mapping/config.js';

// Issue 16: cloud POS downloads are often .csv.gz or a .zip holding one CSV. Told by content, held to
// the limits of XLSX archives. On main a gzip file was refused as "contains NUL bytes … UTF-16".
const csv = 'SKU,Name,Code\nA-1,Apple,apple\nA-2,髙島屋の①,t\n';
const records = [
  { record_id: 'A-1', display_name: 'Apple', api_value: 'apple', aliases: [], attributes: {}, active: true },
  { record_id: 'A-2', display_name: '髙島屋の①', api_value: 't', aliases: [], attributes: {}, active: true },
];
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

describe('compressed CSV exports', () => {
  it('reads a gzip file by its content, whatever its name; the export is identified by the compressed bytes', async () => {
    const gz = gzipSync(Buffer.from(csv));
    for (const name of ['export.csv.gz', 'export.csv', 'download']) {
      const r = await readText(gz, {}, simpleMapping, name);
      expect(r.rejected).toBeNull();
      expect(r.records).toEqual(records);
      expect(r.lines).toEqual([2, 3]);
      expect(r.compression).toBe('gzip');
      expect(r.sha256).toBe(sha(gz));
      expect(r.bytes).toBe(gz.length);
    }
  });

  it('reads concatenated gzip members as one file, and a CP932 CSV split at every chunk size', async () => {
    const sjis = iconv.encode('SKU,Name,Code\r\nJ-1,髙島屋の①番,j\r\nJ-2,ﾊﾝｶｸ,k\r\n', 'cp932');
    const gz = Buffer.concat([gzipSync(sjis.subarray(0, 20)), gzipSync(sjis.subarray(20))]);
    const dir = await tempDir();
    const file = join(dir, 'x.csv.gz');
    await writeFile(file, gz);
    const { readExportFile } = await import('../../src/sources/read.js');
    for (const chunk_bytes of [1, 3, 7, 64, 65536]) {
      const r = await readExportFile(file, sourceConfigSchema.parse({ type: 'csv', encoding: 'cp932' }), mappingConfigSchema.parse(simpleMapping), { chunk_bytes });
      expect(r.rejected).toBeNull();
      expect(r.records.map((x) => x.display_name)).toEqual(['髙島屋の①番', 'ﾊﾝｶｸ']);
    }
  });

  it('reads the one CSV of a zip, leaving out folders and macOS extras', async () => {
    const zip = makeZip([
      { name: 'export/', data: Buffer.alloc(0), method: 0 },
      { name: 'export/items.csv', data: Buffer.from(csv) },
      { name: '__MACOSX/export/._items.csv', data: Buffer.from('junk') },
      { name: '.DS_Store', data: Buffer.from('junk') },
    ]);
    const r = await readText(zip, {}, simpleMapping, 'items.zip');
    expect(r.rejected).toBeNull();
    expect(r.records).toEqual(records);
    expect(r.compression).toBe('zip');
    expect(r.sha256).toBe(sha(zip));
  });

  it('refuses a zip of several files, naming them', async () => {
    const zip = makeZip([
      { name: 'a.csv', data: Buffer.from(csv) },
      { name: 'b.csv', data: Buffer.from(csv) },
    ]);
    const r = await readText(zip, {}, simpleMapping, 'two.zip');
    expect(r.rejected).toMatchObject({ code: 'WRONG_FORMAT', message: expect.stringMatching(/2 files \("a\.csv", "b\.csv"\).*exactly one CSV/) });
    expect(r.records).toEqual([]);
  });

  it('still tells an XLSX workbook given as CSV to set type: xlsx', async () => {
    const zip = makeZip([{ name: '[Content_Types].xml', data: Buffer.from('<Types/>') }, { name: 'xl/workbook.xml', data: Buffer.from('<workbook/>') }]);
    const r = await readText(zip, {}, simpleMapping, 'book.csv');
    expect(r.rejected).toMatchObject({ code: 'WRONG_FORMAT', message: expect.stringContaining('set type: xlsx') });
  });

  it('holds a gzip file to the ratio and total limits while it inflates', async () => {
    const big = Buffer.from(`SKU,Name,Code\n${'A-1,x,y\n'.repeat(3_000_000)}`);
    const gz = gzipSync(big);
    const ratio = await readText(gz, {}, simpleMapping, 'bomb.csv.gz');
    expect(ratio.rejected).toMatchObject({ code: 'ZIP_BOMB', context: { setting: 'limits.max_compression_ratio' } });
    const total = await readText(gz, { limits: { max_compression_ratio: 100_000, max_uncompressed_bytes: 1024 * 1024 } }, simpleMapping, 'bomb.csv.gz');
    expect(total.rejected).toMatchObject({ code: 'ZIP_BOMB', context: { setting: 'limits.max_uncompressed_bytes' } });
  });

  it('holds a zip export to the same limits, from its central directory', async () => {
    const zip = makeZip([{ name: 'big.csv', data: Buffer.concat([Buffer.from('SKU,Name,Code\n'), Buffer.alloc(20 * 1024 * 1024, 0x20)]) }]);
    const r = await readText(zip, {}, simpleMapping, 'bomb.zip');
    expect(r.rejected).toMatchObject({ code: 'ZIP_BOMB', context: { setting: 'limits.max_compression_ratio' } });
  });

  it('refuses a truncated gzip file as TRUNCATED and a damaged one as WRONG_FORMAT: nothing from either is used', async () => {
    // One header (a repeated header is refused on its own, REPEATED_HEADER), then enough rows to cut into.
    const rows = Array.from({ length: 100 }, (_, i) => `B-${i},Item ${i},b${i}\n`).join('');
    const gz = gzipSync(Buffer.from(csv + rows));
    const cut = await readText(gz.subarray(0, gz.length - 12), {}, simpleMapping, 'cut.csv.gz');
    expect(cut.rejected?.code).toBe('TRUNCATED');
    expect(cut.records).toEqual([]);
    const bad = Buffer.from(gz);
    bad[bad.length - 6]! ^= 0xff; // the CRC-32 in the trailer
    const damaged = await readText(bad, {}, simpleMapping, 'bad.csv.gz');
    expect(damaged.rejected?.code).toBe('WRONG_FORMAT');
    expect(damaged.rejected?.message).toMatch(/damaged gzip/);
    expect(damaged.records).toEqual([]);
  });

  it('finds the line of bad UTF-8 inside a gzip file', async () => {
    const body = Buffer.concat([Buffer.from('SKU,Name,Code\nA-1,ok,a\nA-2,'), Buffer.from([0xff, 0xfe, 0x41]), Buffer.from(',b\n')]);
    const r = await readText(gzipSync(body), {}, simpleMapping, 'x.csv.gz');
    expect(r.rejected).toMatchObject({ code: 'BAD_ENCODING', context: { line: 3 } });
  });

  it('names a compressed format it does not read, instead of "NUL bytes"', async () => {
    const r = await readText(Buffer.from('BZh91AY&SY\x00\x00binary', 'latin1'), {}, simpleMapping, 'x.csv.bz2');
    expect(r.rejected).toMatchObject({ code: 'WRONG_FORMAT', message: expect.stringContaining('bzip2 archive') });
    const text = await readText('BZh,Name,Code\nA-1,b,c\n', {}, { fields: { record_id: 'BZh', display_name: 'Name', api_value: 'Code' } });
    expect(text.rejected).toBeNull();
  });

  it('an archive inside the archive is named for what it is, with the fix that works (review of issue 16)', async () => {
    const gz = gzipSync(Buffer.from(csv));
    const xlsx = makeZip([{ name: '[Content_Types].xml', data: Buffer.from('<Types/>') }]);
    const cases: Array<[string, Buffer, RegExp]> = [
      ['x.zip', makeZip([{ name: 'items.csv.gz', data: gz }]), /zip archive holds a gzip archive \("items\.csv\.gz"\), not a CSV; the connector unpacks one level/],
      ['x.csv.gz.gz', gzipSync(gz), /gzip file holds a gzip archive, not a CSV; the connector unpacks one level/],
      ['book.zip', makeZip([{ name: 'book.xlsx', data: xlsx }]), /zip archive holds an Excel workbook \("book\.xlsx"\), not a CSV; put the workbook itself in the folder and set type: xlsx/],
    ];
    for (const [name, bytes, message] of cases) {
      const r = await readText(bytes, {}, simpleMapping, name);
      expect([name, r.rejected?.code, r.rejected?.message]).toEqual([name, 'WRONG_FORMAT', expect.stringMatching(message)]);
      expect(r.rejected?.message).not.toMatch(/NUL|UTF-16/);
    }
  });

  it('a compressed export is never sent as an upload (the server takes the file as it is)', async () => {
    const dir = await tempDir();
    const file = join(dir, 'export.csv.gz');
    await writeFile(file, gzipSync(Buffer.from(csv)));
    const work = join(dir, 'work');
    await mkdir(work);
    const r = await readSource(file, sourceConfigSchema.parse({ type: 'csv' }), mappingConfigSchema.parse(simpleMapping), work);
    expect(r.records).toBe(2);
    expect(r.importability).toEqual({ importable: false, reason: expect.stringContaining('compressed (gzip)') });
  });

  it('closes the file when a read stops early', async () => {
    const gz = gzipSync(Buffer.from(`SKU,Name,Code\n${'A-1,x,y\n'.repeat(20_000)}`));
    const dir = await tempDir();
    const file = join(dir, 'dup.csv.gz');
    await writeFile(file, gz);
    const open = async () => (await Promise.all((await readdir('/proc/self/fd')).map((fd) => readlink(`/proc/self/fd/${fd}`).catch(() => '')))).filter((p) => p === file).length;
    const { readExport } = await import('../../src/sources/read.js');
    const reader = readExport(file, sourceConfigSchema.parse({ type: 'csv' }), mappingConfigSchema.parse(simpleMapping), { chunk_bytes: 1024 });
    for await (const _ of reader.batches()) break;
    expect(await open()).toBe(0);
  });
});
