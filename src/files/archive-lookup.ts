import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { NEVER_FOLLOW, hashFile } from '../sources/open-file.js';
import { isArchivedName } from './archive.js';
import { splitExt } from '../file-names.js';
import type { ReadyFile } from './ready-file.js';

/**
 * The newest export archived in `dir` (processed/) whose content is `hash` (of
 * those archived from `originalName`, when given), or
 * null: pruned, never archived there, or the folder is missing. Superseded
 * files (never synced) and reject files are passed over; the rest are hashed
 * newest first (by modification time, which the move keeps) until one matches.
 */
export async function findArchivedExport(dir: string, hash: string, originalName?: string): Promise<ReadyFile | null> {
  // Given the name it had, only its archived copies are hashed (archiveName keeps the stem; a very long one is cut).
  const stem = originalName === undefined ? '' : splitExt(originalName).stem.slice(0, 100);
  const entries = await readdir(dir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  const candidates: ReadyFile[] = [];
  for (const e of entries) {
    if (!e.isFile() || !isArchivedName(e.name) || !e.name.startsWith(stem) || /\.(superseded|rejected)(-\d+)?(\.|$)/.test(e.name)) continue;
    const path = join(dir, e.name);
    const st = await lstat(path).catch(() => undefined);
    if (st?.isFile()) candidates.push({ path, name: e.name, size: st.size, mtimeMs: st.mtimeMs });
  }
  candidates.sort((a, b) => b.mtimeMs - a.mtimeMs);
  for (const c of candidates) if ((await hashFile(c.path, NEVER_FOLLOW).catch(() => null)) === hash) return c;
  return null;
}
