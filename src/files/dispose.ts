import { lstat, mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { WatchConfig } from '../config/watch.js';
import { splitExt } from '../file-names.js';
import { rejectFilePath } from '../sources/reject-file.js';
import { archiveName, fateDir, type FileFate } from './archive.js';
import { moveFile } from './move.js';
import type { ReadyFile } from './ready-file.js';

/** What became of a file after processing. */
export type Disposal =
  | { action: 'moved'; to: string; rejectFile?: string }
  | { action: 'deleted'; rejectFile?: string }
  | { action: 'left'; rejectFile?: string }
  /** The file changed since it was read: it is a newer export and stays for the watcher. */
  | { action: 'kept_changed' };

/** Options of disposeFile. */
export interface DisposeOptions {
  now: number;
  /** IANA zone of the timestamp in archived names (the top-level `timezone`). */
  timezone: string;
  /** The reject file the read wrote beside the export (src/sources rejectFilePath); moved along when present. */
  rejectSource?: string;
}

/**
 * Apply the watch's `after` setting to a file once its sync is over: move it to
 * processed/ or failed/ (its reject file moved beside it), delete it (the
 * reject file still goes to that folder), or leave both. A file
 * that changed since it was read is a newer export and is never touched. A
 * per-file or folder marker is consumed once the file is moved or deleted,
 * unless `after` is leave. Throws (errno in `code`) when the folder cannot be written.
 */
export async function disposeFile(
  file: ReadyFile,
  fate: FileFate,
  cfg: WatchConfig,
  opts: DisposeOptions,
): Promise<Disposal> {
  // What is at the path now must be what was read: the same kind of entry (a regular file, or the followed
  // link) with the same size and mtime. A file swapped for a link meanwhile is never moved: moving follows
  // nothing, but the EXDEV copy would copy the link's target.
  const entry = await lstat(file.path).catch(() => undefined);
  const st = entry && (file.viaLink ? (entry.isSymbolicLink() ? await stat(file.path).catch(() => undefined) : undefined) : entry.isFile() ? entry : undefined);
  if (entry && (!st || st.size !== file.size || st.mtimeMs !== file.mtimeMs)) return { action: 'kept_changed' };

  const tag = fate === 'superseded' ? 'superseded' : undefined;
  const dir = fateDir(cfg, fate);
  const target = await freeName(dir, archiveName(file.name, opts.now, opts.timezone, tag));
  if (cfg.after === 'leave') {
    return opts.rejectSource && (await isRegularFile(opts.rejectSource)) ? { action: 'left', rejectFile: opts.rejectSource } : { action: 'left' };
  }
  let rejectFile: string | undefined;
  if (opts.rejectSource && (await isRegularFile(opts.rejectSource))) {
    await mkdir(dir, { recursive: true, mode: 0o750 });
    rejectFile = rejectFilePath(target);
    await moveFile(opts.rejectSource, rejectFile);
  }
  const withReject = rejectFile ? { rejectFile } : {};

  let done: Disposal;
  if (!st || cfg.after === 'delete') {
    if (st) await rm(file.path, { force: true });
    done = { action: 'deleted', ...withReject };
  } else {
    await mkdir(dir, { recursive: true, mode: 0o750 });
    await moveFile(file.path, target);
    done = { action: 'moved', to: target, ...withReject };
  }
  // Only once the file is gone: a marker removed before a failed move would leave the file never picked up again.
  if (file.markerPath) await rm(file.markerPath, { force: true });
  return done;
}

/** `name` in `dir`, or `name` with -1, -2… before the extension when taken. */
async function freeName(dir: string, name: string): Promise<string> {
  const { stem, ext } = splitExt(name);
  for (let i = 0; ; i++) {
    const candidate = join(dir, i === 0 ? name : `${stem}-${i}${ext}`);
    // lstat: a dangling link under the name takes it too (a copy through it would write where it points).
    if (!(await lstat(candidate).catch(() => undefined))) return candidate;
  }
}

async function isRegularFile(path: string): Promise<boolean> {
  return (await lstat(path).catch(() => undefined))?.isFile() ?? false;
}
