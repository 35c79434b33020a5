import { closeSync, openSync, readSync, rmSync } from 'node:fs';
import { CursorHeap } from './cursor-heap.js';
import { ByteWriter } from './line-file.js';

/**
 * The id runs of an external sort (source-sorter.ts): beside each sorted run,
 * its ids alone, in the same order, so that repeated ids are found by merging
 * those rather than the whole runs. Binary and private to the sort: each entry
 * is the id's UTF-8 byte length (u32 LE), its bytes, and its file line (u32 LE).
 * The merge compares the bytes as they lie in its read buffers (byte order is
 * record_id order, A7) and decodes an id only when it is repeated: decoding
 * each id into a string cost more than all the rest of the check (issue 18).
 *
 * Equal bytes are equal ids: the bytes are an encoder's, valid UTF-8, which
 * decodes one way only (the sorted runs themselves hold the same bytes).
 */

/** Id runs merged at once (open files); more are merged in rounds first. */
const FAN_IN = 64;
/** Bytes read at a time from each id run being merged. */
const READ_BYTES = 64 * 1024;

/** Writes one id run: entries in record_id order, gathered in `chunk` (the caller's, reused) and written a chunk at a time. */
export class IdRunWriter {
  readonly #file: ByteWriter;
  #at = 0;

  constructor(
    readonly path: string,
    private readonly chunk: Buffer,
  ) {
    this.#file = new ByteWriter(path);
  }

  /** An entry whose id's UTF-8 bytes are src[from, end). */
  put(src: Buffer, from: number, end: number, line: number): void {
    const len = end - from;
    if (8 + len > this.chunk.length - this.#at) this.#flush();
    if (8 + len > this.chunk.length) {
      // An id longer than the chunk: written on its own.
      const one = Buffer.allocUnsafe(8 + len);
      putU32(one, 0, len);
      src.copy(one, 4, from, end);
      putU32(one, 4 + len, line);
      this.#file.write(one);
      return;
    }
    const c = this.chunk;
    let at = this.#at;
    putU32(c, at, len);
    at += 4;
    // An id is a few bytes: a loop costs less than a call of Buffer#copy.
    for (let i = from; i < end; i++) c[at++] = src[i]!;
    putU32(c, at, line);
    this.#at = at + 4;
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

function putU32(b: Buffer, at: number, n: number): void {
  b[at] = n & 0xff;
  b[at + 1] = (n >>> 8) & 0xff;
  b[at + 2] = (n >>> 16) & 0xff;
  b[at + 3] = (n >>> 24) & 0xff;
}

/** A position in an id run: the current entry's id is buf[idAt, idEnd). */
class IdCursor {
  #fd: number;
  buf = Buffer.allocUnsafe(READ_BYTES);
  /** Where the next entry starts, and where the bytes read end. */
  #at = 0;
  #end = 0;
  idAt = 0;
  idEnd = 0;
  line = 0;

  constructor(readonly path: string) {
    this.#fd = openSync(path, 'r');
  }

  /** Move to the next entry; false at the end (the file is closed then). */
  next(): boolean {
    if (!this.#have(4)) return this.#close();
    const buf = this.buf;
    const len = u32(buf, this.#at);
    if (!this.#have(8 + len)) throw new Error(`id run ${this.path} ends inside an entry`);
    const b = this.buf; // #have may have moved or replaced the buffer
    this.idAt = this.#at + 4;
    this.idEnd = this.idAt + len;
    this.line = u32(b, this.idEnd);
    this.#at = this.idEnd + 4;
    return true;
  }

  close(): void {
    this.#close();
  }

  /** The current id. */
  id(): string {
    return this.buf.toString('utf8', this.idAt, this.idEnd);
  }

  /** At least `n` bytes from #at in the buffer (false when the file ends first, with none left). */
  #have(n: number): boolean {
    if (this.#end - this.#at >= n) return true;
    if (this.#fd < 0) return false;
    if (this.#at > 0) {
      this.buf.copy(this.buf, 0, this.#at, this.#end);
      this.#end -= this.#at;
      this.#at = 0;
    }
    if (n > this.buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(n, 2 * this.buf.length)); // an id longer than the buffer
      this.buf.copy(bigger, 0, 0, this.#end);
      this.buf = bigger;
    }
    while (this.#end < n) {
      const got = readSync(this.#fd, this.buf, this.#end, this.buf.length - this.#end, null);
      if (got === 0) {
        if (this.#end === 0) return false;
        throw new Error(`id run ${this.path} ends inside an entry`);
      }
      this.#end += got;
    }
    return true;
  }

  #close(): false {
    if (this.#fd >= 0) closeSync(this.#fd);
    this.#fd = -1;
    return false;
  }
}

function u32(b: Buffer, at: number): number {
  return (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;
}

/** Whether a[at, at + len) holds the bytes b[0, len) (an id is a few bytes: a loop costs less than a call of Buffer#compare). */
function sameBytes(a: Buffer, at: number, b: Buffer, len: number): boolean {
  for (let i = 0; i < len; i++) if (a[at + i] !== b[i]) return false;
  return true;
}

/** Byte order of the two cursors' ids. */
function compareAt(x: IdCursor, y: IdCursor): number {
  const a = x.buf;
  const b = y.buf;
  const la = x.idEnd - x.idAt;
  const lb = y.idEnd - y.idAt;
  const n = la < lb ? la : lb;
  for (let i = 0, p = x.idAt, q = y.idAt; i < n; i++, p++, q++) {
    const d = a[p]! - b[q]!;
    if (d !== 0) return d;
  }
  return la - lb;
}

/**
 * The entries of id runs merged in record_id order; among equal ids the run
 * given first comes first (runs are in file order, each stable). `each` is
 * called with the cursor at each entry.
 */
function mergeEach(paths: readonly string[], each: (c: IdCursor) => void): void {
  const cursors = paths.map((p) => new IdCursor(p));
  try {
    const heap = new CursorHeap(cursors, (i, j) => {
      const c = compareAt(cursors[i]!, cursors[j]!);
      return c < 0 || (c === 0 && i < j);
    });
    for (let i = heap.top(); i >= 0; i = heap.top()) {
      each(cursors[i]!);
      heap.advance();
    }
  } finally {
    for (const c of cursors) c.close();
  }
}

/**
 * Report each repeated id of the id runs `paths` (in file order of their
 * sort), with the line it was met again at and the line of its first
 * occurrence; the runs are removed. `newRun`: a path for a round's merged run.
 */
export function repeatedIds(
  paths: readonly string[],
  onRepeat: (id: string, line: number, first: number) => void,
  newRun: () => string,
  chunk: Buffer,
): void {
  let runs = [...paths];
  try {
    while (runs.length > FAN_IN) {
      const group = runs.slice(0, FAN_IN);
      const out = new IdRunWriter(newRun(), chunk);
      try {
        mergeEach(group, (c) => out.put(c.buf, c.idAt, c.idEnd, c.line));
        out.close();
      } catch (err) {
        out.close();
        rmSync(out.path, { force: true });
        throw err;
      }
      for (const r of group) rmSync(r, { force: true });
      runs = [out.path, ...runs.slice(FAN_IN)]; // earlier lines first: its entries win ties
    }
    // The first occurrence's id bytes, kept while its repeats are met (the cursor's buffer moves on).
    let last = Buffer.allocUnsafe(256);
    let lastLen = -1;
    let lastLine = 0;
    mergeEach(runs, (c) => {
      const len = c.idEnd - c.idAt;
      if (len === lastLen && sameBytes(c.buf, c.idAt, last, len)) {
        onRepeat(c.id(), c.line, lastLine);
        return;
      }
      if (len > last.length) last = Buffer.allocUnsafe(Math.max(len, 2 * last.length));
      c.buf.copy(last, 0, c.idAt, c.idEnd);
      lastLen = len;
      lastLine = c.line;
    });
  } finally {
    for (const r of runs) rmSync(r, { force: true });
  }
}
