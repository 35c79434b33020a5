import type { Logger } from 'pino';
import type { DatasetConfig } from '../config/schema.js';
import { ConnectorError, hasCode } from '../errors.js';
import { event } from '../log/events.js';
import type { SyncResult, SyncSummary } from '../sync/outcome.js';
import { rejectFilePath } from '../sources/reject-file.js';
import type { FileFate } from './archive.js';
import { SourceError } from '../model/source-error.js';
import { hashFile } from '../sources/open-file.js';
import { linkPolicyFor } from './links.js';
import { disposeReported, type StuckFiles } from './dispose-reported.js';
import type { FileSyncer, HealthReasons, LastFile } from './ports.js';
import type { FileOrigin, ReadyFile } from './ready-file.js';
import type { Clock } from '../clock.js';

/** What happens next with a file after its sync. */
export type FileNext =
  /** Done: apply `after` with this fate. */
  | { next: 'dispose'; fate: FileFate }
  /** Keep the file and try it again later (server trouble, foreign draft). */
  | { next: 'retry'; slow: boolean };

/** What a file job tells its runtime: the file's fate, and whether its content is now what the server holds (or was found equal). */
export type FileJobResult = FileNext & { accepted: boolean };

/** Pure: from a sync result to the file's fate. */
export function nextForResult(result: SyncResult | 'skipped'): FileNext {
  switch (result) {
    case 'published':
    case 'unchanged':
    case 'skipped':
    case 'held':
    case 'staged':
      return { next: 'dispose', fate: 'processed' };
    case 'rejected':
      return { next: 'dispose', fate: 'failed' };
    case 'failed':
    case 'interrupted': // stopped between steps (shutdown): its plan resumes at the next start
    case 'paused': // paused after the runtime let the file through: the retry finds it paused and parks it
      return { next: 'retry', slow: false };
    case 'waiting':
    case 'stopped':
      return { next: 'retry', slow: true };
  }
}

/** Pure: from an error the engine threw to the file's fate, by action (never by message). */
export function nextForError(err: unknown): FileNext {
  if (!(err instanceof ConnectorError)) return { next: 'retry', slow: false };
  switch (err.action) {
    case 'reject':
      return { next: 'dispose', fate: 'failed' };
    case 'hold':
      return { next: 'dispose', fate: 'processed' };
    case 'retry':
      return { next: 'retry', slow: false };
    case 'stop':
      return { next: 'retry', slow: true };
  }
}

/**
 * Pure: why a file with content `hash` is not synced, or null. An export whose
 * content is the last one processed (`last`) is known. A reapply (its expected
 * content `reapplyOf`) runs only while the last export's hash stays forgotten:
 * any export processed since then is newer than the archived one.
 */
export function skipReason(hash: string, last: string | null, reapplyOf?: string): 'same_content' | 'archive_changed' | 'newer_export' | null {
  if (reapplyOf !== undefined && hash !== reapplyOf) return 'archive_changed';
  if (hash === last) return 'same_content';
  if (reapplyOf !== undefined && last !== null) return 'newer_export';
  return null;
}

/** Everything a file job needs. */
export interface FileJobDeps {
  engine: FileSyncer;
  state: LastFile;
  logger: Logger;
  health: HealthReasons;
  timezone: string;
  /** The one clock (src/clock.ts). */
  clock: Clock;
  /** A summary of a finished sync (metrics, health). */
  onSummary?(s: SyncSummary): void;
  /** A sync threw (health). */
  onError?(err: unknown): void;
  /** Aborted at stop: the engine ends the sync between journaled steps. */
  signal?: AbortSignal;
  /** A watched file that cannot be moved after its sync, noted for `status` (dispose-reported.ts). */
  stuck?: StuckFiles;
}

/**
 * Process one ready file: skip it when its content equals the last export
 * processed, else sync it; then move, delete or leave it (watched files only),
 * or say it must be retried.
 */
export async function runFileJob(
  ds: DatasetConfig,
  job: { file: ReadyFile; origin: FileOrigin; reapplyOf?: string },
  deps: FileJobDeps,
): Promise<FileJobResult> {
  const { file, origin } = job;
  const log = deps.logger;
  log.info(event('file.ready', { file: file.path, origin, bytes: file.size }), 'file ready');
  let next: FileNext;
  let accepted = false;
  // Issue 11: a file of the watch folder is never a link (unless follow_symlinks), nor a FIFO or device.
  const links = linkPolicyFor(origin, ds.watch);
  const hashed = await hashJob(ds, job, deps);
  if ('next' in hashed) return hashed;
  const hash = hashed.hash;
  const skip = skipReason(hash, deps.state.lastFileHash(ds.name), job.reapplyOf);
  if (skip) {
    log.info(event('file.skipped', { file: file.path, origin, reason: skip, file_hash: hash }), 'file skipped');
    next = nextForResult('skipped');
    accepted = true;
  } else {
    try {
      const summary = await deps.engine.sync(ds, { file: file.path, links, sha256: hash }, deps.signal ? { signal: deps.signal } : {});
      deps.onSummary?.(summary);
      next = nextForResult(summary.result);
      accepted = next.next === 'dispose' && next.fate === 'processed';
    } catch (err) {
      deps.onError?.(err);
      const code = err instanceof ConnectorError ? err.code : 'INTERNAL';
      log.error(event('sync.failed', { file: file.path, code, err }), 'sync failed');
      next = nextForError(err);
    }
  }
  return disposeJob(ds, job, next, accepted, deps);
}

/**
 * Hash a ready file once (the read must find the same bytes), or say what
 * becomes of it without a sync: gone (nothing to do), a link or FIFO swapped
 * in (left alone), unreadable (kept, tried again).
 */
export async function hashJob(ds: DatasetConfig, job: { file: ReadyFile; origin: FileOrigin }, deps: Pick<FileJobDeps, 'logger' | 'health' | 'clock'>): Promise<{ hash: string } | FileJobResult> {
  const { file, origin } = job;
  const log = deps.logger;
  try {
    const hash = await hashFile(file.path, linkPolicyFor(origin, ds.watch));
    deps.health.clear(ds.name, 'file');
    return { hash };
  } catch (err) {
    const code = err instanceof SourceError ? String(err.context.errno ?? err.code) : ((err as NodeJS.ErrnoException).code ?? 'INTERNAL');
    if (code === 'ENOENT') {
      // Gone between ready and now (moved by someone else): nothing to do.
      log.warn(event('file.skipped', { file: file.path, origin, reason: 'gone' }), 'file skipped');
      return { next: 'dispose', fate: 'processed', accepted: false };
    }
    if (hasCode(err, 'LINK_NOT_FOLLOWED', 'NOT_REGULAR_FILE')) {
      // Swapped for a link or a FIFO since the watcher saw it: not opened, and left where it is (never moved).
      const reason = err.code === 'LINK_NOT_FOLLOWED' ? 'symlink' : 'not_regular_file';
      log.warn(event('file.skipped', { file: file.path, origin, reason, why: err.message }), 'file skipped: not opened');
      return { next: 'dispose', fate: 'processed', accepted: false };
    }
    // There but not readable (permissions, I/O): keep it and try again once fixed.
    const hint = 'grant the service user read access to the file (and search access to its folder)';
    log.error(event('file.unreadable', { file: file.path, origin, code, hint, err }), 'cannot read the export');
    deps.health.set(ds.name, 'file', 'FILE_UNREADABLE', `cannot read ${file.path}: ${code}; ${hint}`, deps.clock.now());
    return { next: 'retry', slow: false, accepted: false };
  }
}

/**
 * After the sync: a watched file's `after` (move, delete, leave) with its
 * fate, logged; a move that fails is tried again later (the content is then
 * known, so the retry only moves it). `ds` is the view of the file's feed (its watch).
 */
export async function disposeJob(ds: DatasetConfig, job: { file: ReadyFile; origin: FileOrigin }, next: FileNext, accepted: boolean, deps: FileJobDeps, fields: Record<string, unknown> = {}): Promise<FileJobResult> {
  const { file, origin } = job;
  if (next.next === 'dispose' && (origin === 'watch' || origin === 'startup') && ds.watch) {
    const watched = { ...ds, watch: ds.watch };
    const opts = { now: deps.clock.now(), timezone: deps.timezone, rejectSource: rejectFilePath(file.path) };
    const d = await disposeReported(watched, file, next.fate, opts, deps);
    if (d === null) return { next: 'retry', slow: false, accepted };
    const line = { file: file.path, fate: next.fate, ...fields, ...d };
    if (next.fate === 'failed') deps.logger.warn(event('file.rejected', line), 'file rejected');
    else deps.logger.info(event('file.processed', line), 'file processed');
  }
  return { ...next, accepted };
}
