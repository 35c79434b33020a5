import { closeSync, fchmodSync, fsyncSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';

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

/** Appends lines to a new private (0600) file; `close` flushes it, and fsyncs it when asked. */
export class LineWriter {
  readonly #fd: number;
  #buf = '';
  #open = true;
  /** Lines written so far. */
  count = 0;

  constructor(readonly path: string) {
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

  #flush(): void {
    if (this.#buf === '') return;
    writeSync(this.#fd, this.#buf);
    this.#buf = '';
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

  constructor(
    readonly path: string,
    private readonly chunk: Buffer,
  ) {
    this.#file = new ByteWriter(path);
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
    this.#at += src.copy(chunk, this.#at, from, end);
  }

  /** Append one byte. */
  putByte(b: number): void {
    if (this.#at === this.chunk.length) this.#flush();
    this.chunk[this.#at++] = b;
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

/** The lines of a file, in order, without their line breaks. */
export function* readLines(path: string, chunkBytes = READ_CHUNK): Generator<string> {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(chunkBytes);
    const decoder = new StringDecoder('utf8');
    let rest = '';
    for (;;) {
      const n = readSync(fd, buf, 0, chunkBytes, null);
      if (n === 0) break;
      const text = rest + decoder.write(buf.subarray(0, n));
      const lines = text.split('\n');
      rest = lines.pop()!;
      for (const line of lines) yield line;
    }
    rest += decoder.end();
    if (rest !== '') yield rest;
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
