import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { appendFile, rename, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { sourceConfigSchema } from '../../src/sources/config.js';
import { mappingConfigSchema } from '../../src/mapping/config.js';
import { readExport } from '../../src/sources/read.js';
import { SourceError } from '../../src/model/source-error.js';
import { simpleMapping, tempDir } from './helpers.js';

// A file changed while it is read never yields a usable result: its rows come from a file that never existed whole.
const rows = (from: number, n: number) => Array.from({ length: n }, (_, i) => `A-${from + i},name ${from + i},c${from + i}\n`).join('');

/** Read `file` in small chunks, calling `meddle` after the first batch; returns the reader's verdict. */
async function readMeddled(file: string, meddle: () => Promise<void>) {
  const reader = readExport(file, sourceConfigSchema.parse({ type: 'csv' }), mappingConfigSchema.parse(simpleMapping), { chunk_bytes: 64 });
  let first = true;
  try {
    for await (const _ of reader.batches()) {
      if (first) await meddle();
      first = false;
    }
  } catch (err) {
    if (!(err instanceof SourceError)) throw err;
  }
  return reader.result!;
}

describe('a file that changes while it is read', () => {
  it('grows (a writer still appending, at a line end): FILE_CHANGED, action retry, nothing used', async () => {
    const file = join(await tempDir(), 'stock.csv');
    await writeFile(file, `SKU,Name,Code\n${rows(1, 50)}`);
    const r = await readMeddled(file, () => appendFile(file, rows(51, 50)));
    expect(r.rejected).toMatchObject({ code: 'FILE_CHANGED', action: 'retry' });
  });

  it('is rewritten in place with the same size: FILE_CHANGED', async () => {
    const file = join(await tempDir(), 'stock.csv');
    const text = `SKU,Name,Code\n${rows(1, 50)}`;
    await writeFile(file, text);
    const r = await readMeddled(file, async () => {
      await writeFile(file, text.replace('A-1,', 'B-1,'));
      await utimes(file, new Date(), new Date(Date.now() + 60_000));
    });
    expect(r.rejected?.code).toBe('FILE_CHANGED');
  });

  it('is replaced by a rename: the file opened is read to its end, whole and unchanged', async () => {
    const dir = await tempDir();
    const file = join(dir, 'stock.csv');
    await writeFile(file, `SKU,Name,Code\n${rows(1, 50)}`);
    const r = await readMeddled(file, async () => {
      await writeFile(join(dir, 'next.csv'), `SKU,Name,Code\n${rows(100, 3)}`);
      await rename(join(dir, 'next.csv'), file);
    });
    expect(r.rejected).toBeNull();
    expect(r.counts.records).toBe(50);
  });
});

describe('a file read with the hash it was handed on with (hashed once, at the file job)', () => {
  const read = async (file: string, sha256: string) => {
    const reader = readExport(file, sourceConfigSchema.parse({ type: 'csv' }), mappingConfigSchema.parse(simpleMapping), { sha256 });
    try {
      for await (const _ of reader.batches());
    } catch (err) {
      if (!(err instanceof SourceError)) throw err;
    }
    return reader.result!;
  };

  it('the same bytes: read as usual, named by that hash', async () => {
    const file = join(await tempDir(), 'stock.csv');
    const text = `SKU,Name,Code\n${rows(1, 20)}`;
    await writeFile(file, text);
    const sha = createHash('sha256').update(text).digest('hex');
    const r = await read(file, sha);
    expect(r.rejected).toBeNull();
    expect(r.sha256).toBe(sha);
    expect(r.counts.records).toBe(20);
  });

  it('other bytes than the ones hashed (rewritten in between, same size): FILE_CHANGED, nothing used', async () => {
    const file = join(await tempDir(), 'stock.csv');
    const before = `SKU,Name,Code\n${rows(1, 20)}`;
    await writeFile(file, before.replace('name 1,', 'NAME 1,'));
    const r = await read(file, createHash('sha256').update(before).digest('hex'));
    expect(r.rejected).toMatchObject({ code: 'FILE_CHANGED', action: 'retry' });
  });
});
