import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';

/** Names disposeFile gives: `<stem>.<YYYYMMDD-HHmmss>[.superseded][-n][.rejected][.ext]`. */
const ARCHIVED = /\.\d{8}-\d{6}(?:\.superseded)?(?:-\d+)?(?:\.rejected)?(?:\.[^.]+)?$/;

/** True when `name` is one disposeFile writes (an archived export or its reject file). */
export function isArchivedName(name: string): boolean {
  return ARCHIVED.test(name);
}

/** What a prune did. */
export interface PruneResult {
  dir: string;
  deleted: string[];
  /** Files that could not be removed, with their errno. */
  failed: Array<{ file: string; code: string }>;
}

/**
 * Delete the archived files of `dir` (processed/ or failed/) last modified
 * more than `maxAgeMs` before `now`. Only names disposeFile writes are
 * touched, so other files a shop keeps there stay. A missing folder is empty.
 */
export async function pruneArchive(dir: string, maxAgeMs: number, now: number): Promise<PruneResult> {
  const out: PruneResult = { dir, deleted: [], failed: [] };
  const entries = await readdir(dir, { withFileTypes: true }).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  for (const e of entries) {
    if (!e.isFile() || !isArchivedName(e.name)) continue;
    const path = join(dir, e.name);
    const st = await lstat(path).catch(() => undefined);
    if (!st || now - st.mtimeMs <= maxAgeMs) continue;
    try {
      await rm(path);
      out.deleted.push(path);
    } catch (err) {
      out.failed.push({ file: path, code: (err as NodeJS.ErrnoException).code ?? 'INTERNAL' });
    }
  }
  return out;
}
