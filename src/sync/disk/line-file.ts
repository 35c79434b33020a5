import type { Hash } from 'node:crypto';
import { closeSync, fchmodSync, fsyncSync, openSync, readSync, rmSync, writeSync } from 'node:fs';

/**
 * Text files of one line per entry, written and read a chunk at a time, for
 * the sync's data on disk (sorted source, changeset). Synchronous on purpose:
 * a large diff is a tight loop over them, and callers yield to the event loop
 * between slices themselves. Fields are separated by tabs: JSON never holds a
 * raw tab or line break, and record ids are written escaped when they do.
 */

/** Characters written before a chunk goes to the file. */
const WRITE_CHUNK = 1 << 20;
/** Bytes read from a file at a time. */
const READ_CHUNK = 1 << 18;

/** Appends lines to a new private (0600) file; `close` flushes it, and fsyncs it when asked; `hash`, when given, is fed every byte written. */
export class LineWriter {
  readonly #fd: number;
  #buf = '';
  #open = true;
  /** Lines written so far. */
  count = 0;

  constructor(
    readonly path: string,
    private readonly hash: Hash | null = null,
  ) {
    this.#fd = openPrivate(path);
  }

  write(line: string): void {
    this.#buf += line;
    this.#buf += '\n';
    this.count++;
    if (this.#buf.length >= WRITE_CHUNK) this.#flush();
  }

  /** Flush and close; `sync`: fsync first, so the lines survive a crash. */
  close(sync = false): void {
    if (!this.#open) return;
    this.#open = false;
    try {
      this.#flush();
      if (sync) fsyncSync(this.#fd);
    } finally {
      closeSync(this.#fd);
    }
  }

  /** Close without writing what is buffered (a write failed: the file is not to be used). */
  abandon(): void {
    if (!this.#open) return;
    this.#open = false;
    this.#buf = '';
    closeSync(this.#fd);
  }

  #flush(): void {
    if (this.#buf === '') return;
    const text = this.#buf;
    this.#buf = '';
    // A write may be short (a disk full for a moment): the rest is written, or the next write throws. Without a
    // hash the string is written as it is (the sort's runs: no copy of 1 MiB to bytes first), the common case.
    let at = 0;
    if (this.hash === null) {
      at = writeSync(this.#fd, text);
      if (at === Buffer.byteLength(text)) return;
    }
    const bytes = Buffer.from(text, 'utf8');
    this.hash?.update(bytes);
    while (at < bytes.length) at += writeSync(this.#fd, bytes, at, bytes.length - at);
  }
}

/** Writes bytes to a new private (0600) file. */
export class ByteWriter {
  readonly #fd: number;

  constructor(readonly path: string) {
    this.#fd = openPrivate(path);
  }

  write(bytes: Uint8Array): void {
    let at = 0;
    while (at < bytes.length) at += writeSync(this.#fd, bytes, at, bytes.length - at);
  }

  close(): void {
    closeSync(this.#fd);
  }
}

/**
 * Writes byte ranges of other buffers to a new private (0600) file, gathered
 * in `chunk` (the caller's, reused) and written a chunk at a time.
 */
export class ChunkWriter {
  readonly #file: ByteWriter;
  #at = 0;
  /** `chunk`, and the last source put, as plain Uint8Array views. */
  readonly #bytes: Uint8Array;
  #src: Buffer | null = null;
  #srcBytes: Uint8Array = new Uint8Array(0);

  constructor(
    readonly path: string,
    private readonly chunk: Buffer,
  ) {
    this.#file = new ByteWriter(path);
    this.#bytes = new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length);
  }

  /** Append src[from, end). */
  put(src: Buffer, from: number, end: number): void {
    const chunk = this.chunk;
    const len = end - from;
    if (len > chunk.length - this.#at) this.#flush();
    if (len > chunk.length) {
      this.#file.write(src.subarray(from, end));
      return;
    }
    if (len > SHORT_COPY) {
      // TypedArray#set of a plain view: Buffer#copy checks its arguments in JS first, a third of a sort's run writing.
      if (src !== this.#src) {
        this.#src = src;
        this.#srcBytes = new Uint8Array(src.buffer, src.byteOffset, src.length);
      }
      this.#bytes.set(this.#srcBytes.subarray(from, end), this.#at);
      this.#at += len;
      return;
    }
    // A few bytes (a short id) are copied here: a call to set or copy costs more than they do.
    let at = this.#at;
    for (let i = from; i < end; i++) chunk[at++] = src[i]!;
    this.#at = at;
  }

  /** Flush and close. */
  close(): void {
    try {
      this.#flush();
    } finally {
      this.#file.close();
    }
  }

  #flush(): void {
    if (this.#at > 0) this.#file.write(this.chunk.subarray(0, this.#at));
    this.#at = 0;
  }
}

/** Bytes up to which ChunkWriter#put copies in a loop rather than with Buffer#copy. */
const SHORT_COPY = 32;

/** Open `path` as a new 0600 file, whatever the umask (it holds the shop's records); a leftover of that name (a crash mid-write) is replaced, its mode not kept. */
export function openPrivate(path: string): number {
  rmSync(path, { force: true });
  const fd = openSync(path, 'wx', 0o600);
  try {
    fchmodSync(fd, 0o600);
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  return fd;
}

/**
 * The lines of a file, in order, without their line breaks. Read into one
 * reused buffer, each line decoded alone: a chunk decoded whole would be one
 * string that every line cut from it keeps alive until its last line is used,
 * and a merge of many runs (run-merge.ts) keeps one such chunk per run alive
 * across thousands of diff steps: long enough for V8 to move them to its old
 * generation, which it collects too seldom (all of a 1,000,000-record diff's
 * run text was moved there, 200 MB, and the peak RSS rose with it).
 */
export function* readLines(path: string, chunkBytes = READ_CHUNK, hash?: Hash): Generator<string> {
  const fd = openSync(path, 'r');
  try {
    let buf = Buffer.allocUnsafe(chunkBytes);
    let start = 0;
    let end = 0;
    for (;;) {
      // A line break byte is never part of a multi-byte UTF-8 character: a line's bytes decode on their own.
      const nl = buf.indexOf(0x0a, start);
      if (nl >= 0 && nl < end) {
        yield buf.toString('utf8', start, nl);
        start = nl + 1;
        continue;
      }
      if (start > 0) {
        buf.copy(buf, 0, start, end);
        end -= start;
        start = 0;
      } else if (end === buf.length) {
        const bigger = Buffer.allocUnsafe(2 * buf.length); // a line longer than the buffer
        buf.copy(bigger, 0, 0, end);
        buf = bigger;
      }
      const n = readSync(fd, buf, end, buf.length - end, null);
      if (n === 0) {
        if (end > 0) yield buf.toString('utf8', 0, end);
        return;
      }
      hash?.update(buf.subarray(end, end + n));
      end += n;
    }
  } finally {
    closeSync(fd);
  }
}

/** A record id as the first field of a line: as it is, or as JSON when it holds a tab, line break, quote or backslash (never an A6 id). */
export function idField(id: string): string {
  return UNSAFE.test(id) ? JSON.stringify(id) : id;
}

/** The id back from idField. */
export function parseIdField(field: string): string {
  return field.charCodeAt(0) === 0x22 ? (JSON.parse(field) as string) : field;
}

const UNSAFE = /[\t\n\r"\\]/;

/**
 * A copy of a string that shares no memory with the chunk it was cut from:
 * V8 keeps a substring as a view of its parent, so one id kept from a line
 * would keep the whole chunk read with it.
 */
export function detach(s: string): string {
  return s.length < 13 ? s : Buffer.from(s, 'utf8').toString('utf8');
}
