import { mkdtemp, readdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { rejectFilePath, writeRejectFile } from '../../src/sources/reject-file.js';
import { archiveName } from '../../src/files/archive.js';
import { disposeFile } from '../../src/files/dispose.js';
import { watchConfigSchema } from '../../src/config/watch.js';
import type { ReadyFile } from '../../src/files/ready-file.js';

const NOW = Date.UTC(2024, 3, 12, 3, 15, 0);
const bytes = (s: string) => Buffer.byteLength(s);

/** A name of exactly `n` bytes ending in .csv, of Japanese text (3 bytes a character) and ASCII filler. */
function longName(n: number): string {
  let stem = '';
  while (bytes(stem) + 3 <= n - 4) stem += '在';
  while (bytes(stem) < n - 4) stem += 'x';
  return `${stem}.csv`;
}

// Issue 17: a 254-byte export name failed to archive with ENAMETOOLONG and stayed in the inbox for ever.
describe('archive and reject-file names stay within 255 bytes', () => {
  it('archiveName and rejectFilePath shorten a long stem on a character boundary, keeping the extension and a hash of the whole', () => {
    const a = longName(254);
    const b = `${a.slice(0, -5)}y.csv`; // same first 249 bytes
    for (const name of [a, b]) {
      const archived = archiveName(name, NOW, 'UTC', 'superseded');
      expect(bytes(archived)).toBeLessThanOrEqual(255 - 8); // room for freeName's -N
      expect(archived).toMatch(/\.20240412-031500\.superseded\.csv$/);
      expect(archived).not.toContain('\uFFFD');
      expect(bytes(rejectFilePath(join('/x', archived)).slice(3))).toBeLessThanOrEqual(255);
      expect(bytes(rejectFilePath(join('/x', name)).slice(3))).toBeLessThanOrEqual(255);
    }
    expect(archiveName(a, NOW, 'UTC')).not.toBe(archiveName(b, NOW, 'UTC'));
    expect(archiveName('stock.csv', NOW, 'UTC')).toBe('stock.20240412-031500.csv');
  });

  it('a 254-byte export is written a reject file and moved to failed/ with it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dc-long-'));
    const name = longName(254);
    const path = join(dir, name);
    await writeFile(path, 'sku\nA\n');
    const st = await stat(path);
    const file: ReadyFile = { path, name, size: st.size, mtimeMs: st.mtimeMs };
    const reject = await writeRejectFile(path, [{ file: path, line: 2, column: 'sku', value: 'A', code: 'TRANSFORM_FAILED', reason: 'bad' }]);
    const cfg = watchConfigSchema.parse({ path: dir });
    const d = await disposeFile(file, 'failed', cfg, { now: NOW, timezone: 'UTC', rejectSource: reject });
    expect(d.action).toBe('moved');
    expect(await readdir(dir)).toEqual(['failed']);
    const moved = await readdir(join(dir, 'failed'));
    expect(moved).toHaveLength(2);
    for (const n of moved) expect(bytes(n)).toBeLessThanOrEqual(255);
  });
});
