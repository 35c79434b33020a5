import type { Logger } from 'pino';
import { event } from '../log/events.js';
import { fateDir } from '../triggers/after.js';
import type { WatchConfig } from '../config/watch.js';
import { pruneArchive } from '../triggers/retention.js';

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
