import { close, constants, fstat, lstat, open, read, realpath, stat, type Stats } from 'node:fs';
import { createHash } from 'node:crypto';
import { resolve, sep } from 'node:path';
import { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { SourceError } from '../model/source-error.js';

/**
 * Whether a read may follow a path that is a symbolic link (issue 11). A
 * watch folder is written by the POS, and whoever can write there could
 * leave a link to any file the service user can read (a key file, another
 * shop's export): such a file is never opened unless the operator said so.
 */
export type LinkPolicy =
  /** A file found in a watch folder (or its processed/): a link is refused. */
  | { follow: 'never' }
  /** watch.follow_symlinks: a link whose real path lies inside one of `roots` (absolute folders). */
  | { follow: 'within'; roots: readonly string[] }
  /** A path the operator named (sync --file, a reread path, a command's output_file): followed like any path. */
  | { follow: 'always' };

export const NEVER_FOLLOW: LinkPolicy = { follow: 'never' };
export const ALWAYS_FOLLOW: LinkPolicy = { follow: 'always' };

/** An open regular file: its descriptor (the caller closes it, closeFile) and what fstat said of it when opened. */
export interface OpenedFile {
  fd: number;
  size: number;
  mtimeMs: number;
  dev: number;
  ino: number;
}

const openP = promisify(open);
const fstatP = promisify(fstat);
const closeP = promisify(close);

// O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, and the daemon with it.
// O_NOFOLLOW: a file swapped for a link between our check and the open is not followed (ELOOP).
const BASE_FLAGS = constants.O_RDONLY | (constants.O_NONBLOCK ?? 0);
const NO_FOLLOW = constants.O_NOFOLLOW ?? 0;

/** What kind of non-regular file `st` is, in words for a log line. */
export function fileKind(st: Stats): string {
  if (st.isSymbolicLink()) return 'a symbolic link';
  if (st.isDirectory()) return 'a folder';
  if (st.isFIFO()) return 'a named pipe (FIFO)';
  if (st.isSocket()) return 'a socket';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  return 'not a regular file';
}

/** True when `path` (absolute, real) is `root` or inside it. */
export function isInside(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}

/**
 * Why the link at `path` may not be followed under `links`, or null when it
 * may (its real path is returned through `real`). Roots are compared by
 * their real paths too, so a watch folder reached through a link still counts.
 */
export async function linkRefusal(path: string, links: LinkPolicy): Promise<{ refused: string } | { real: string }> {
  if (links.follow === 'never') return { refused: 'links in a watch folder are not followed (watch.follow_symlinks)' };
  const real = await promisify(realpath)(path).catch(() => null);
  if (real === null) return { refused: 'it points to nothing that exists' };
  if (links.follow === 'always') return { real };
  const roots = await Promise.all(links.roots.map((r) => promisify(realpath)(r).catch(() => resolve(r))));
  if (!roots.some((r) => isInside(real, r))) return { refused: 'it leads out of the watch folder and its processed and failed folders' };
  return { real };
}

/**
 * Open an export for reading without being led astray (issue 11): a link is
 * followed only as `links` allows; anything but a regular file (a FIFO, a
 * socket, a device, a folder) is refused before it is opened, and again by
 * fstat after the open (O_NONBLOCK, so a FIFO swapped in never blocks); a
 * file swapped for a link between the check and the open is not followed
 * (O_NOFOLLOW) or, once opened, is seen to be another file (device and inode).
 */
export async function openRegularFile(path: string, links: LinkPolicy): Promise<OpenedFile> {
  const ctx = { file: path };
  let before: Stats;
  try {
    before = await promisify(lstat)(path);
  } catch (err) {
    throw osError(path, err);
  }
  let target = path;
  if (before.isSymbolicLink()) {
    const verdict = await linkRefusal(path, links);
    if ('refused' in verdict) throw new SourceError('LINK_NOT_FOLLOWED', `${path}: is a symbolic link and was not opened: ${verdict.refused}`, { ...ctx, setting: 'watch.follow_symlinks' });
    target = verdict.real;
    try {
      before = await promisify(stat)(target);
    } catch (err) {
      throw osError(path, err);
    }
  }
  if (!before.isFile()) throw new SourceError('NOT_REGULAR_FILE', `${path}: is ${fileKind(before)}, not a regular file, and was not opened`, ctx);
  let fd: number;
  try {
    fd = await openP(target, BASE_FLAGS | (links.follow === 'always' ? 0 : NO_FOLLOW));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ELOOP') {
      throw new SourceError('LINK_NOT_FOLLOWED', `${path}: became a symbolic link while it was opened, and was not followed`, { ...ctx, setting: 'watch.follow_symlinks' });
    }
    throw osError(path, err);
  }
  try {
    const st = await fstatP(fd);
    if (!st.isFile()) throw new SourceError('NOT_REGULAR_FILE', `${path}: is ${fileKind(st)}, not a regular file`, ctx);
    if (st.dev !== before.dev || st.ino !== before.ino) {
      throw new SourceError('FILE_CHANGED', `${path}: was replaced while it was opened; it is read again once it settles`, ctx);
    }
    return { fd, size: st.size, mtimeMs: st.mtimeMs, dev: st.dev, ino: st.ino };
  } catch (err) {
    await closeP(fd).catch(() => undefined);
    throw err instanceof SourceError ? err : osError(path, err);
  }
}

/** Close a descriptor from openRegularFile (errors ignored: the read is over). */
export async function closeFile(fd: number): Promise<void> {
  await closeP(fd).catch(() => undefined);
}

/** What fstat says of an open file now (to tell whether it changed while it was read). */
export async function fileState(fd: number): Promise<{ size: number; mtimeMs: number }> {
  const st = await fstatP(fd);
  return { size: st.size, mtimeMs: st.mtimeMs };
}

/**
 * The bytes of an open file from `start` to `end` (inclusive; default: to
 * the end), by positioned reads. Unlike fs.createReadStream, whose destroy()
 * closes the descriptor even with autoClose: false, ending or destroying
 * this stream never closes it: the descriptor is the read's until closeFile.
 */
export function fdReadStream(fd: number, opts: { start?: number; end?: number; highWaterMark?: number } = {}): Readable {
  let pos = opts.start ?? 0;
  const last = opts.end ?? Infinity;
  return new Readable({
    highWaterMark: opts.highWaterMark ?? 64 * 1024,
    read(size) {
      const want = Math.min(size, last - pos + 1);
      if (want <= 0) {
        this.push(null);
        return;
      }
      const buf = Buffer.allocUnsafe(want);
      read(fd, buf, 0, want, pos, (err, n) => {
        if (this.destroyed) return;
        if (err) this.destroy(err);
        else if (n === 0) this.push(null);
        else {
          pos += n;
          this.push(n < want ? buf.subarray(0, n) : buf);
        }
      });
    },
  });
}

/** Hex SHA-256 of an open file's bytes from its start (the descriptor stays open). */
export async function hashFd(fd: number): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of fdReadStream(fd, { highWaterMark: 256 * 1024 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Hex SHA-256 of a file's bytes, opened as `links` allows (files are identified by content, house style 7). */
export async function hashFile(path: string, links: LinkPolicy): Promise<string> {
  const f = await openRegularFile(path, links);
  try {
    return await hashFd(f.fd);
  } finally {
    await closeFile(f.fd);
  }
}

function osError(path: string, err: unknown): SourceError {
  const code = (err as NodeJS.ErrnoException).code;
  return new SourceError(code === 'ENOENT' ? 'FILE_NOT_FOUND' : 'FILE_UNREADABLE', `${path}: ${(err as Error).message}`, { file: path, errno: code }, err);
}
