import { chmodSync, copyFileSync, linkSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { DatasetRecord } from '../../model/record.js';
import { recordJson } from '../../model/record-json.js';
import { compareIds, isPlainId, plainCompare } from '../../model/snapshot-reader.js';
import type { SourceEntry } from '../core/changeset.js';
import { ValueFlagsWriter } from '../core/record-values.js';
import { baseFlags } from '../core/value-guards.js';
import { ByteWriter, LineWriter, idField, parseIdField, readLines } from './line-file.js';

/**
 * The records of one export sorted by record_id (byte order, A7) on disk, so
 * that a diff of any size merge-joins them with the snapshot in bounded
 * memory (issue 18). An external merge sort: records are kept in memory up to
 * a run's worth of bytes, sorted and written as a run; the runs are merged
 * as they are read. A repeated record_id is found by merging the runs' ids
 * (equal ids meet), the earliest line kept.
 *
 * Measured against spilling into a SQLite table and letting it sort (ORDER BY
 * or an index) on 1,000,000 records: SQLite's insert, sort and read cost
 * about 1.5× a bare csv-parse of the export on their own, these runs ~0.2×.
 */

export type { SourceEntry } from '../core/changeset.js';

/** Bytes of records held in memory before a run goes to disk. */
export const RUN_BYTES = 16 * 1024 * 1024;
/** Runs merged at once (open files); more are merged in rounds first. */
const FAN_IN = 64;

/**
 * Source entries in record_id order: the sorted runs of an external sort,
 * merged as they are read (the first of equal ids wins: runs are in file
 * order). One file when the export fit in one run.
 */
export class SortedSource {
  constructor(
    /** The run files, in the order their entries win ties. */
    readonly runs: readonly string[],
    /** Records, repeated ids left out. */
    readonly count: number,
    /** Every id compares right with `<` (isPlainId): the merge compares them so, not with compareIds. */
    readonly plain = false,
    /** The attribute key lists of the entries' flags (ValueFlagsWriter); none when the runs were found in a folder. */
    readonly shapes: readonly (readonly string[])[] = [],
  ) {}

  /** The runs of a folder that linkInto wrote (with `name`: linkInto(dir, name)). */
  static inFolder(dir: string, name = 'source'): SortedSource {
    const runs = readdirSync(dir)
      .filter((n) => n.startsWith(`${name}-`) && /^\d+$/.test(n.slice(name.length + 1)))
      .sort()
      .map((n) => join(dir, n));
    return new SortedSource(runs, -1);
  }

  /** The entries in record_id order. */
  *entries(): Generator<SourceEntry> {
    if (this.runs.length === 1) {
      yield* readEntries(this.runs[0]!);
      return;
    }
    const merged = mergeCursors(this.runs.map((r) => fileCursor(r)), this.plain ? plainCompare : compareIds, true);
    for (let c = merged(); c !== null; c = merged()) {
      const json = c.text.slice(c.jsonAt);
      yield c.flagsAt < 0 ? { record_id: c.id, line: c.line, json } : { record_id: c.id, line: c.line, json, flags: c.text.slice(c.flagsAt, c.jsonAt - 1) };
    }
  }

  /** The file lines of the given record ids (one pass). */
  linesOf(ids: Iterable<string>): Map<string, number> {
    const want = new Set(ids);
    const out = new Map<string, number>();
    if (want.size === 0) return out;
    for (const e of this.entries()) {
      if (want.has(e.record_id)) out.set(e.record_id, e.line);
      if (out.size === want.size) break;
    }
    return out;
  }

  /** Give the runs second names in `dir` (source-0001, …; `name`-0001 …), for a changeset that outlives the sync's scratch folder. */
  linkInto(dir: string, name = 'source'): void {
    this.runs.forEach((r, i) => linkOrCopy(r, join(dir, `${name}-${String(i + 1).padStart(4, '0')}`)));
  }
}

/** The entries of a file of entry lines. */
export function* readEntries(path: string): Generator<SourceEntry> {
  for (const text of readLines(path)) {
    const a = text.indexOf('\t');
    const b = text.indexOf('\t', a + 1);
    const record_id = parseIdField(text.slice(0, a));
    const line = Number(text.slice(a + 1, b));
    if (text.charCodeAt(b + 1) !== FLAGS_MARK) yield { record_id, line, json: text.slice(b + 1) };
    else {
      const c = text.indexOf('\t', b + 1);
      yield { record_id, line, json: text.slice(c + 1), flags: text.slice(b + 2, c) };
    }
  }
}

/**
 * One entry as a line (no line break): id, file line, then the value flags when given (after FLAGS_MARK, a
 * character no JSON starts with, so lines without them, and files written before them, read the same), JSON.
 */
export function entryLine(id: string, line: number, json: string, flags?: string): string {
  return flags === undefined ? `${idField(id)}\t${line}\t${json}` : `${idField(id)}\t${line}\t~${flags}\t${json}`;
}

/** `~`: starts the flags field of an entry line. */
const FLAGS_MARK = 0x7e;

/** A record_id met again, at `line`; `first`: the line it was first met at. */
export type OnDuplicate = (recordId: string, line: number, first: number) => void;

/**
 * Sorts source entries given in file order into a SortedSource in `dir`.
 * A run's entries are held as UTF-8 in one buffer outside the JS heap (only
 * their ids stay on it, for sorting): kept as strings they would live long
 * enough to reach V8's old generation, which is collected too seldom to give
 * the memory back between runs (a peak of 400 MB at 1,000,000 records).
 * Beside each run goes its ids alone, so that repeated ids are found by
 * merging those (a tenth of the bytes) rather than the whole runs.
 */
export class SourceSorter {
  #buf: Buffer;
  #out = releasable(OUT_CHUNK);
  #used = 0;
  /** Entries held: their ids, file lines and starts in #buf (arrays kept and reused from run to run). */
  #n = 0;
  /** Entries not yet encoded into #buf (they follow its #used bytes), from entry #pendingFirst on. */
  #pending = '';
  #pendingFirst = 0;
  #ids: string[] = [];
  #lines: Int32Array = new Int32Array(1024);
  #starts: Int32Array = new Int32Array(1024);
  #order: number[] = [];
  /** Every id so far compares right with `<` (isPlainId). */
  #plain = true;
  #runs: string[] = [];
  #idRuns: string[] = [];
  #seq = 0;
  #added = 0;
  readonly #flags = new ValueFlagsWriter(baseFlags);

  constructor(
    private readonly dir: string,
    private readonly runBytes = RUN_BYTES,
  ) {
    this.#buf = releasable(Math.min(FIRST_BYTES, Math.max(runBytes, 1024)), Math.max(runBytes, 1024));
  }

  /**
   * A mapped record: its canonical JSON, with the value guards' flags of its values beside it (so the diff
   * does not read them from the text). Only this sorter's own writer puts flags in its runs: they are read
   * with its shapes (SortedSource.shapes), never another's.
   */
  addRecord(rec: DatasetRecord, line: number): void {
    this.#add(rec.record_id, line, recordJson(rec), this.#flags.of(rec));
  }

  /** A record as its canonical JSON (its values are read from the text when it is compared). */
  add(recordId: string, line: number, json: string): void {
    this.#add(recordId, line, json, undefined);
  }

  #add(recordId: string, line: number, json: string, flags: string | undefined): void {
    const text = `${entryLine(recordId, line, json, flags)}\n`;
    // UTF-8 takes at most 3 bytes per UTF-16 code unit.
    const need = this.#used + 3 * (this.#pending.length + text.length);
    if (need > this.#buf.length && !this.#grow(need)) {
      this.#spill();
      if (3 * text.length > this.#buf.length && !this.#grow(3 * text.length)) {
        release(this.#buf);
        this.#buf = releasable(3 * text.length);
      }
    }
    const n = this.#n++;
    if (n === this.#lines.length) {
      this.#lines = grow(this.#lines);
      this.#starts = grow(this.#starts);
    }
    this.#ids[n] = recordId;
    this.#lines[n] = line;
    // Gathered and encoded a chunk at a time (a write per record costs more than its bytes); the start is
    // right when the chunk is ASCII, and put right by #flushPending when it is not.
    if (this.#pending === '') this.#pendingFirst = n;
    this.#starts[n] = this.#used + this.#pending.length;
    this.#pending += text;
    if (this.#pending.length >= PENDING_CHARS) this.#flushPending();
    this.#added++;
    if (this.#plain && !isPlainId(recordId)) this.#plain = false;
    if (this.#used + this.#pending.length >= this.runBytes) this.#spill();
  }

  /** Make #buf hold `bytes`, in place, up to the size it was made for; false when it cannot (a run must go to disk). */
  #grow(bytes: number): boolean {
    const ab = this.#buf.buffer as ArrayBuffer & { resizable?: boolean; maxByteLength?: number; resize?: (n: number) => void };
    if (!ab.resizable || this.#buf.length === 0 || bytes > ab.maxByteLength!) return false;
    const size = Math.min(ab.maxByteLength!, Math.max(bytes, 2 * this.#buf.length));
    ab.resize!(size);
    this.#buf = Buffer.from(ab, 0, size);
    return true;
  }

  #flushPending(): void {
    if (this.#pending === '') return;
    const bytes = this.#buf.write(this.#pending, this.#used, 'utf8');
    if (bytes !== this.#pending.length) {
      // Not all ASCII: each entry starts after the line break of the one before (JSON holds none raw).
      let at = this.#used;
      for (let k = this.#pendingFirst; k < this.#n; k++) {
        this.#starts[k] = at;
        at = this.#buf.indexOf(0x0a, at) + 1;
      }
    }
    this.#used += bytes;
    this.#pending = '';
  }

  /** The sorted source; each later occurrence of an id is reported and left out. */
  finish(onDuplicate: OnDuplicate): SortedSource {
    let dups = 0;
    const report: OnDuplicate = (id, line, first) => {
      dups++;
      onDuplicate(id, line, first);
    };
    if (this.#runs.length === 0) {
      // It all fit in one run: sorted in memory, repeats left out there.
      this.#flushPending();
      const path = this.#newRun();
      this.#writeRun(path, report);
      this.#release();
      return new SortedSource([path], this.#added - dups, this.#plain, this.#flags.shapes);
    }
    this.#spill();
    this.#release();
    const cmp = this.#plain ? plainCompare : compareIds;
    this.#runs = mergeRounds(this.#runs, cmp, true, () => this.#newRun());
    this.#idRuns = mergeRounds(this.#idRuns, cmp, false, () => this.#newRun());
    const merged = mergeCursors(this.#idRuns.map((r) => fileCursor(r)), cmp, false);
    let last: Cursor | null = null;
    let lastId = '';
    let lastLine = 0;
    for (let c = merged(); c !== null; c = merged()) {
      if (last !== null && c.id === lastId) report(c.id, c.line, lastLine);
      else {
        last = c;
        lastId = c.id;
        lastLine = c.line;
      }
    }
    for (const r of this.#idRuns) rmSync(r, { force: true });
    this.#idRuns = [];
    return new SortedSource(this.#runs, this.#added - dups, this.#plain, this.#flags.shapes);
  }

  /** Remove the run files and drop what is held (also when the read is abandoned). */
  discardRuns(): void {
    for (const r of [...this.#runs, ...this.#idRuns]) rmSync(r, { force: true });
    this.#runs = [];
    this.#idRuns = [];
    this.#release();
  }

  /** Give back the memory of the runs (the sorter takes no entries after): at once, not at V8's next full collection. */
  #release(): void {
    this.#clear();
    this.#ids = [];
    this.#order = [];
    release(this.#buf);
    release(this.#out);
  }

  #clear(): void {
    this.#pending = '';
    // The ids array keeps its size for the next run (overwritten in place): regrowing it each run leaves
    // large garbage arrays that only V8's full collections free.
    this.#n = 0;
    this.#used = 0;
  }

  #sorted(): number[] {
    const ids = this.#ids;
    const order = this.#order;
    order.length = this.#n;
    for (let i = 0; i < this.#n; i++) order[i] = i;
    // Stable: equal ids keep file order, so the earliest line comes first.
    if (this.#plain) order.sort((a, b) => (ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : a - b));
    else order.sort((a, b) => compareIds(ids[a]!, ids[b]!) || a - b);
    return order;
  }

  /**
   * Write what is held, sorted, as the run `path`; with `onDuplicate`, later
   * entries of an id are left out and reported, else an id run is written
   * beside it for finish() to find repeats across runs.
   */
  #writeRun(path: string, onDuplicate: OnDuplicate | null): void {
    const order = this.#sorted();
    const { starts, ids, lines, n } = { starts: this.#starts, ids: this.#ids, lines: this.#lines, n: this.#n };
    const buf = this.#buf;
    const out = this.#out;
    const file = new ByteWriter(path);
    let at = 0;
    let last = -1;
    const idRun = onDuplicate ? null : new LineWriter(`${path}.ids`);
    try {
      for (const i of order) {
        if (onDuplicate && last >= 0 && ids[i] === ids[last]) {
          onDuplicate(ids[i]!, lines[i]!, lines[last]!);
          continue;
        }
        const from = starts[i]!;
        const end = i + 1 < n ? starts[i + 1]! : this.#used;
        if (end - from > out.length - at) {
          file.write(out.subarray(0, at));
          at = 0;
        }
        if (end - from > out.length) file.write(buf.subarray(from, end));
        else at += buf.copy(out, at, from, end);
        idRun?.write(`${idField(ids[i]!)}\t${lines[i]!}`);
        last = i;
      }
      file.write(out.subarray(0, at));
    } finally {
      file.close();
      idRun?.close();
    }
    if (idRun) this.#idRuns.push(idRun.path);
  }

  /** Sort what is held and write it as a run. */
  #spill(): void {
    this.#flushPending();
    if (this.#n === 0) return;
    const path = this.#newRun();
    this.#writeRun(path, null);
    this.#runs.push(path);
    this.#clear();
  }

  #newRun(): string {
    return join(this.dir, `run-${String(++this.#seq).padStart(4, '0')}`);
  }
}

/** Bytes of a sorted run written at a time. */
const OUT_CHUNK = 1 << 20;

/**
 * A buffer whose memory release() gives back to the system at once: a run's
 * 16 MB outlived the read until V8's next full collection (the peak RSS of a
 * sync came after the read, issue 18). A resizable ArrayBuffer shrunk to 0.
 */
function releasable(bytes: number, maxBytes = bytes): Buffer {
  return Buffer.from(new ResizableArrayBuffer(bytes, { maxByteLength: maxBytes }), 0, bytes);
}

/**
 * Bytes a sorter's buffer starts with; it grows in place up to its run size as
 * entries come: a 10,000-row stock file needs 1-2 MB, and zeroing 16 MB for
 * it cost ~15 ms of CPU in each of a feed sync's sorts (issue 13).
 */
const FIRST_BYTES = 1024 * 1024;

// ES2024 (V8 11.1, Node 20); not yet in the TypeScript lib this project targets.
const ResizableArrayBuffer = ArrayBuffer as unknown as new (bytes: number, options: { maxByteLength: number }) => ArrayBuffer;

function release(buf: Buffer): void {
  const ab = buf.buffer as ArrayBuffer & { resizable?: boolean; resize?: (n: number) => void };
  if (ab.resizable) ab.resize!(0);
}

function grow(a: Int32Array): Int32Array {
  const b = new Int32Array(a.length * 2);
  b.set(a);
  return b;
}
/** Characters of ASCII entries encoded at once. */
const PENDING_CHARS = 8 * 1024;


/** A position in a sorted stream of lines (`id<TAB>line<TAB>…`); `next` moves to the next one (false at the end). */
interface Cursor {
  id: string;
  line: number;
  text: string;
  /** Where the JSON starts in `text`. */
  jsonAt: number;
  /** Where the value flags start in `text` (after their mark), or -1. */
  flagsAt: number;
  next(): boolean;
}

function fileCursor(path: string): Cursor {
  const lines = readLines(path, MERGE_CHUNK);
  return {
    id: '',
    line: 0,
    text: '',
    jsonAt: 0,
    flagsAt: -1,
    next() {
      const r = lines.next();
      if (r.done) return false;
      const text = r.value;
      const a = text.indexOf('\t');
      let b = text.indexOf('\t', a + 1);
      if (b < 0) b = text.length;
      this.id = parseIdField(text.slice(0, a));
      this.line = Number(text.slice(a + 1, b));
      this.text = text;
      if (text.charCodeAt(b + 1) === FLAGS_MARK) {
        this.flagsAt = b + 2;
        this.jsonAt = text.indexOf('\t', b + 1) + 1;
      } else {
        this.flagsAt = -1;
        this.jsonAt = b + 1;
      }
      return true;
    },
  };
}

/** Bytes read at a time from each run being merged (many are open at once). */
const MERGE_CHUNK = 64 * 1024;

/**
 * A k-way merge of sorted cursors: each call gives the next cursor in id
 * order (null at the end); among equal ids the cursor given first comes
 * first (runs are in file order). `dedupe`: only the first of equal ids.
 */
function mergeCursors(cursors: Cursor[], cmp: (a: string, b: string) => number, dedupe: boolean): () => Cursor | null {
  // A binary heap of cursor indices, ordered by (id, index).
  const heap: number[] = [];
  const less = (x: number, y: number): boolean => {
    const c = cmp(cursors[x]!.id, cursors[y]!.id);
    return c < 0 || (c === 0 && x < y);
  };
  const down = (i: number): void => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
      if (r < heap.length && less(heap[r]!, heap[m]!)) m = r;
      if (m === i) return;
      const t = heap[i]!;
      heap[i] = heap[m]!;
      heap[m] = t;
      i = m;
    }
  };
  for (let i = 0; i < cursors.length; i++) if (cursors[i]!.next()) heap.push(i);
  for (let i = (heap.length >> 1) - 1; i >= 0; i--) down(i);
  let pending = -1; // the cursor handed out last: moved on at the next call
  let lastId: string | null = null;
  return () => {
    for (;;) {
      if (pending >= 0) {
        if (!cursors[pending]!.next()) {
          heap[0] = heap[heap.length - 1]!;
          heap.pop();
        }
        if (heap.length > 0) down(0);
        pending = -1;
      }
      if (heap.length === 0) return null;
      pending = heap[0]!;
      const top = cursors[pending]!;
      if (dedupe && lastId !== null && top.id === lastId) continue;
      lastId = top.id;
      return top;
    }
  };
}

/** Merge runs `FAN_IN` at a time until at most that many are left (they are all opened at once to merge). */
function mergeRounds(runs: string[], cmp: (a: string, b: string) => number, dedupe: boolean, newRun: () => string): string[] {
  runs = [...runs];
  while (runs.length > FAN_IN) {
    const group = runs.splice(0, FAN_IN);
    const path = newRun();
    const w = new LineWriter(path);
    try {
      const merged = mergeCursors(group.map((r) => fileCursor(r)), cmp, dedupe);
      for (let c = merged(); c !== null; c = merged()) w.write(c.text);
    } finally {
      w.close();
    }
    for (const r of group) rmSync(r, { force: true });
    runs.unshift(path); // earlier lines first: its entries win ties
  }
  return runs;
}

/** A second name for a file (no copy); a copy, 0600, where the filesystem has no hard links. */
export function linkOrCopy(from: string, to: string): void {
  rmSync(to, { force: true });
  try {
    linkSync(from, to);
  } catch {
    copyFileSync(from, to);
    chmodSync(to, 0o600);
  }
}
