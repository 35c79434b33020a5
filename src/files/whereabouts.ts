import { lstat } from 'node:fs/promises';
import { basename, dirname, relative, resolve } from 'node:path';
import type { WatchConfig } from '../config/watch.js';
import { NEVER_FOLLOW, hashFile } from '../sources/open-file.js';
import { fateDir } from './archive.js';
import { findArchivedExport } from './archive-lookup.js';

/**
 * Where a synced export is now (status, issue 13 review): still at its path,
 * archived by its watch's `after: move` (the copy with its content in
 * processed/), deleted by `after: delete`, or not found (pruned, moved by
 * hand). `now` is the path a person can open, or null.
 */
export interface Whereabouts {
  now: string | null;
  how: 'in_place' | 'archived' | 'deleted' | 'not_found';
  /** Not found: the folder it was archived into, where to look. */
  lookIn?: string;
}

/** Where `file` (whose content was `sha256`) is now, given the watch of the folder it came from (none: a file given by hand). */
export async function whereabouts(file: string, sha256: string | null, watch: WatchConfig | undefined): Promise<Whereabouts> {
  const path = resolve(file);
  const there = (await lstat(path).catch(() => null))?.isFile() ?? false;
  // Still there with the same content: not moved yet (kept for a retry), left, or never from a watched folder.
  const same = there && (sha256 === null || (await hashFile(path, NEVER_FOLLOW).catch(() => null)) === sha256);
  if (same) return { now: path, how: 'in_place' };
  if (!watch || dirname(path) !== resolve(watch.path) || watch.after === 'leave' || sha256 === null) return { now: null, how: 'not_found' };
  if (watch.after === 'delete') return { now: null, how: 'deleted' };
  const processed = fateDir(watch, 'processed');
  const archived = await findArchivedExport(processed, sha256, basename(path)).catch(() => null);
  return archived ? { now: archived.path, how: 'archived' } : { now: null, how: 'not_found', lookIn: processed };
}

/** How status says it: the path now, or what became of the file. */
export function whereaboutsText(file: string, w: Whereabouts): string {
  switch (w.how) {
    case 'in_place':
      return file;
    case 'archived':
      return `${basename(file)}, now ${w.now} (moved there after its sync)`;
    case 'deleted':
      return `${file} (deleted after its sync: after: delete)`;
    case 'not_found':
      return `${file} (no longer there${w.lookIn ? `, nor in ${relative(dirname(file), w.lookIn) || w.lookIn}: pruned by retention_days or moved by hand` : ''})`;
  }
}
