import { describe, expect, it } from 'vitest';
import { join } from 'node:path';
import { readFile, writeFile } from 'node:fs/promises';
import iconv from 'iconv-lite';
import { sourceConfigSchema } from '../../src/sources/config.js';
import { mappingConfigSchema } from '../../src/mapping/config.js';
import { readExport } from '../../src/sources/read.js';
import { SourceError } from '../../src/model/source-error.js';
import { rejectFilePath, writeRejectFile } from '../../src/sources/reject-file.js';
import { readText, simpleMapping, tempDir } from './helpers.js';

describe('readExport (streaming)', () => {
  it('streams records and ends normally when the file may be used', async () => {
    const dir = await tempDir();
    const file = join(dir, 'ok.csv');
    await writeFile(file, 'SKU,Name,Code\nA-1,a,a\nA-2,b,b\n');
    const reader = readExport(file, sourceConfigSchema.parse({ type: 'csv' }), mappingConfigSchema.parse(simpleMapping));
    const ids: string[] = [];
    for await (const r of reader) ids.push(r.record_id);
    expect(ids).toEqual(['A-1', 'A-2']);
    expect(reader.result).toMatchObject({ rejected: null, counts: { rows: 2, records: 2 }, bytes: 30 });
  });

  it('throws the SourceError at the end of iteration when the file is refused, so a streaming consumer uses nothing', async () => {
    const dir = await tempDir();
    const file = join(dir, 'bad.csv');
    await writeFile(file, 'SKU,Name,Code\nA-1,a,a\nA 2,b,b\n');
    const reader = readExport(file, sourceConfigSchema.parse({ type: 'csv' }), mappingConfigSchema.parse(simpleMapping));
    await expect(async () => {
      for await (const _ of reader) void _;
    }).rejects.toThrow(SourceError);
    expect(reader.result?.rejected?.code).toBe('ROW_ERRORS');
    expect(reader.result?.sha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('skip_rows leaves bad rows out while under max_bad_row_ratio', async () => {
    const r = await readText('SKU,Name,Code\nA-1,a,a\nA 2,b,b\nA-3,c,c\n', { on_row_errors: 'skip_rows', max_bad_row_ratio: 0.5 });
    expect(r.rejected).toBeNull();
    expect(r.records.map((x) => x.record_id)).toEqual(['A-1', 'A-3']);
    expect(r.row_errors).toHaveLength(1);
  });
});

describe('file-level refusals', () => {
  it('invalid bytes in a legacy encoding', async () => {
    const bytes = Buffer.concat([iconv.encode('SKU,Name,Code\nJ-1,', 'cp932'), Buffer.from([0x81, 0x0a]), Buffer.from(',j\n')]);
    const r = await readText(bytes, { encoding: 'cp932' });
    expect(r.rejected).toMatchObject({ code: 'BAD_ENCODING', context: { line: 2 } });
  });

  it('a UTF-16 file read as UTF-8, and binary data', async () => {
    expect((await readText(iconv.encode('\uFEFFSKU,Name,Code\n', 'utf-16le'))).rejected?.code).toBe('BAD_ENCODING');
    expect((await readText(Buffer.from([1, 0, 2, 0, 3, 10]))).rejected?.code).toBe('WRONG_FORMAT');
  });

  it('max_file_bytes, a missing file', async () => {
    expect((await readText('SKU,Name,Code\nA-1,a,a\n', { limits: { max_file_bytes: 10 } })).rejected?.code).toBe('LIMIT_FILE_BYTES');
    const reader = readExport('/nonexistent/x.csv', sourceConfigSchema.parse({ type: 'csv' }), mappingConfigSchema.parse(simpleMapping));
    await expect(reader.batches().next()).rejects.toMatchObject({ code: 'FILE_NOT_FOUND', action: 'retry' });
  });
});

describe('reject file', () => {
  it('is a CSV beside the processed file with line, column, value, code and reason', async () => {
    const dir = await tempDir();
    const file = join(dir, 'export.csv');
    const r = await readText('SKU,Name,Code\nA 1,"Apple, red",a\n');
    const path = await writeRejectFile(file, r.row_errors);
    expect(path).toBe(rejectFilePath(file));
    expect(path).toBe(join(dir, 'export.rejected.csv'));
    const text = await readFile(path, 'utf8');
    expect(text).toBe('\uFEFFline,column,value,code,reason\r\n2,SKU,A 1,INVALID_RECORD,record_id must be 1–128 characters of A-Z a-z 0-9 . _ : -\r\n');
  });
});
