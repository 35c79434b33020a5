import { mkdtemp, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { archiveName, fileTimestamp } from '../../src/files/archive.js';
import { disposeFile } from '../../src/files/dispose.js';
import { watchConfigSchema } from '../../src/config/watch.js';
import type { ReadyFile } from '../../src/files/ready-file.js';

const NOW = Date.UTC(2024, 3, 12, 3, 15, 0);

async function exportFile(name = 'stock.csv', body = 'sku\nA\n') {
  const dir = await mkdtemp(join(tmpdir(), 'dc-after-'));
  const path = join(dir, name);
  await writeFile(path, body);
  const st = await stat(path);
  const file: ReadyFile = { path, name, size: st.size, mtimeMs: st.mtimeMs };
  return { dir, file };
}

describe('archived names', () => {
  it('keep the name and extension, with a timestamp in the configured zone', () => {
    expect(fileTimestamp(NOW, 'UTC')).toBe('20240412-031500');
    expect(fileTimestamp(NOW, 'Asia/Tokyo')).toBe('20240412-121500');
    expect(archiveName('stock.csv', NOW, 'UTC')).toBe('stock.20240412-031500.csv');
    expect(archiveName('stock.csv', NOW, 'UTC', 'superseded')).toBe('stock.20240412-031500.superseded.csv');
    expect(archiveName('README', NOW, 'UTC')).toBe('README.20240412-031500');
  });
});

describe('dispose', () => {
  const opts = { now: NOW, timezone: 'UTC' };

  it('moves a processed file to processed/, twice without clobbering', async () => {
    const { dir, file } = await exportFile();
    const cfg = watchConfigSchema.parse({ path: dir });
    expect(await disposeFile(file, 'processed', cfg, opts)).toEqual({
      action: 'moved',
      to: join(dir, 'processed', 'stock.20240412-031500.csv'),
    });
    await writeFile(file.path, 'sku\nA\n');
    const st = await stat(file.path);
    await disposeFile({ ...file, mtimeMs: st.mtimeMs }, 'processed', cfg, opts);
    expect((await readdir(join(dir, 'processed'))).sort()).toEqual([
      'stock.20240412-031500-1.csv',
      'stock.20240412-031500.csv',
    ]);
  });

  it('moves a failed file to failed/ with its reject file beside it', async () => {
    const { dir, file } = await exportFile();
    const cfg = watchConfigSchema.parse({ path: dir, failed_dir: 'bad' });
    await writeFile(join(dir, 'stock.rejected.csv'), 'line,reason\n2,bad\n');
    const d = await disposeFile(file, 'failed', cfg, { ...opts, rejectSource: join(dir, 'stock.rejected.csv') });
    const to = join(dir, 'bad', 'stock.20240412-031500.csv');
    const rejectFile = join(dir, 'bad', 'stock.20240412-031500.rejected.csv');
    expect(d).toEqual({ action: 'moved', to, rejectFile });
    expect(await readFile(rejectFile, 'utf8')).toContain('2,bad');
    expect(await readdir(dir)).toEqual(['bad']);
  });

  it('deletes, or leaves, per config, and consumes the marker', async () => {
    const { dir, file } = await exportFile();
    await writeFile(join(dir, 'stock.csv.done'), '');
    const del = watchConfigSchema.parse({ path: dir, after: 'delete' });
    expect(await disposeFile({ ...file, markerPath: join(dir, 'stock.csv.done') }, 'processed', del, opts)).toEqual({
      action: 'deleted',
    });
    expect(await readdir(dir)).toEqual([]);

    const other = await exportFile();
    const leave = watchConfigSchema.parse({ path: other.dir, after: 'leave' });
    expect(await disposeFile(other.file, 'processed', leave, opts)).toEqual({ action: 'left' });
    expect(await readdir(other.dir)).toEqual(['stock.csv']);
  });

  it('keeps the marker when the move fails, so the file is not lost to the watcher', async () => {
    const { dir, file } = await exportFile();
    await writeFile(join(dir, 'processed'), 'a file where the folder should be');
    await writeFile(join(dir, 'stock.csv.done'), '');
    const cfg = watchConfigSchema.parse({ path: dir });
    const err = await disposeFile({ ...file, markerPath: join(dir, 'stock.csv.done') }, 'processed', cfg, opts).catch((e: unknown) => e);
    expect((err as NodeJS.ErrnoException).code).toMatch(/^E[A-Z]+$/);
    expect((await readdir(dir)).sort()).toEqual(['processed', 'stock.csv', 'stock.csv.done']);
  });

  it('never touches a file that changed since it was read', async () => {
    const { dir, file } = await exportFile();
    await writeFile(file.path, 'sku\nA\nB\n');
    const cfg = watchConfigSchema.parse({ path: dir });
    expect(await disposeFile(file, 'processed', cfg, opts)).toEqual({ action: 'kept_changed' });
    expect(await readdir(dir)).toEqual(['stock.csv']);
  });
});
