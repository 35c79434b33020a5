import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { WatchConfig } from '../config/watch.js';
import { event } from '../log/events.js';
import { fateDir, isArchivedName } from './archive.js';

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

const DAY_MS = 86_400_000;

/**
 * Delete the archived files of a watch's processed/ and failed/ modified more
 * than retention_days before `now` (0: keep forever), saying what went in a
 * file.pruned line. Never throws: a folder that cannot be read is logged.
 */
export async function pruneArchives(w: WatchConfig, now: number, log: Logger): Promise<void> {
  if (w.retention_days === 0) return;
  for (const dir of new Set([fateDir(w, 'processed'), fateDir(w, 'failed')])) {
    try {
      const r = await pruneArchive(dir, w.retention_days * DAY_MS, now);
      if (r.deleted.length === 0 && r.failed.length === 0) continue;
      const fields = { dir, deleted: r.deleted.length, retention_days: w.retention_days, failed: r.failed };
      if (r.failed.length > 0) log.warn(event('file.pruned', { ...fields, code: 'PRUNE_FAILED' }), 'some old archived files could not be deleted');
      else log.info(event('file.pruned', fields), 'old archived files deleted');
    } catch (err) {
      const errno = (err as NodeJS.ErrnoException).code ?? 'INTERNAL';
      log.warn(event('file.pruned', { dir, code: 'PRUNE_FAILED', errno, err }), 'cannot prune archived files');
    }
  }
}
