import { resolve } from 'node:path';
import type { WatchConfig } from '../config/watch.js';
import { fitName, NAME_MAX_BYTES, splitExt } from '../file-names.js';
import { zonedParts } from '../zoned-time.js';

/**
 * The archive of a watched folder: where a file goes after its sync
 * (processed/ or failed/) and the name it gets there.
 */

/** Why a file leaves the folder. */
export type FileFate = 'processed' | 'failed' | 'superseded';

/** The folder a fate sends files to, resolved against the watched folder. */
export function fateDir(cfg: WatchConfig, fate: FileFate): string {
  return resolve(cfg.path, fate === 'failed' ? cfg.failed_dir : cfg.processed_dir);
}

/** `YYYYMMDD-HHmmss` of `atMs` in `timezone`, for archived names. */
export function fileTimestamp(atMs: number, timezone: string): string {
  const t = zonedParts(atMs, timezone);
  return `${t.year}${t.month}${t.day}-${t.hour}${t.minute}${t.second}`;
}

/** Bytes kept free in an archived name for freeName's `-N` and the reject file's longer ending. */
const ARCHIVE_NAME_RESERVE_BYTES = 16;

/**
 * Archived name: original stem, timestamp, optional tag, original extension
 * (`stock.20240412-031500.csv`), shortened to leave room for a `-N` and for
 * the reject file named after it (fitName).
 */
export function archiveName(name: string, atMs: number, timezone: string, tag?: string): string {
  const { stem, ext } = splitExt(name);
  return fitName(stem, `.${fileTimestamp(atMs, timezone)}${tag ? `.${tag}` : ''}${ext}`, NAME_MAX_BYTES - ARCHIVE_NAME_RESERVE_BYTES);
}

/**
 * Names disposeFile gives: `<stem>.<YYYYMMDD-HHmmss>[.superseded][-n][.rejected][.ext]`, and the fan-out's
 * reject file of one taking dataset `<…>[-n].<dataset>.rejected.csv` (fan-out-job.ts).
 */
const ARCHIVED = /\.\d{8}-\d{6}(?:\.superseded)?(?:-\d+)?(?:\.(?:[a-z0-9][a-z0-9_-]*\.)?rejected)?(?:\.[^.]+)?$/;

/** True when `name` is one disposeFile writes (an archived export or its reject file). */
export function isArchivedName(name: string): boolean {
  return ARCHIVED.test(name);
}
