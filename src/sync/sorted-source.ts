import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { compareIds, isPlainId } from '../snapshot/reader.js';
import { LineWriter, idField, parseIdField, readLines } from './line-file.js';

/**
 * The records of one export sorted by record_id (byte order, A7) on disk, so
 * that a diff of any size merge-joins them with the snapshot in bounded
 * memory (issue 18). An external merge sort: records are kept in memory up to
 * a run's worth of characters, sorted and written as a run; the runs are then
 * merged into one sorted file. A repeated record_id is found on the way
 * (equal ids meet in the merge), the earliest line kept.
 *
 * Measured against spilling into a SQLite table and letting it sort (ORDER BY
 * or an index) on 1,000,000 records: SQLite's insert, sort and read cost
 * about 1.5× a bare csv-parse of the export on their own, these runs ~0.2×.
 */

/** One source record as the diff reads it: id, file line and canonical JSON (record-json.ts). */
export interface SourceEntry {
  record_id: string;
  line: number;
  json: string;
}

/** Characters of records held in memory before a run goes to disk. */
export const RUN_CHARS = 16 * 1024 * 1024;
/** Runs merged at once (open files); more are merged in rounds. */
const FAN_IN = 64;

/** A file of source entries in record_id order. */
export class SortedSource {
  constructor(
    readonly path: string,
    /** Records in the file. */
    readonly count: number,
  ) {}

  /** The entries in record_id order. */
  *entries(): Generator<SourceEntry> {
    yield* readEntries(this.path);
  }

  /** The file lines of the given record ids (one pass over the file). */
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
}

/** The entries of a file written by writeEntry. */
export function* readEntries(path: string): Generator<SourceEntry> {
  for (const text of readLines(path)) {
    const a = text.indexOf('\t');
    const b = text.indexOf('\t', a + 1);
    yield { record_id: parseIdField(text.slice(0, a)), line: Number(text.slice(a + 1, b)), json: text.slice(b + 1) };
  }
}

/** One entry as a line (no line break). */
export function entryLine(id: string, line: number, json: string): string {
  return `${idField(id)}\t${line}\t${json}`;
}

/** A record_id met again, at `line`; `first`: the line it was first met at. */
export type OnDuplicate = (recordId: string, line: number, first: number) => void;

/** Sorts source entries given in file order into a SortedSource in `dir`. */
export class SourceSorter {
  #ids: string[] = [];
  #lines: number[] = [];
  #texts: string[] = [];
  #chars = 0;
  /** Every id so far compares right with `<` (isPlainId). */
  #plain = true;
  #runs: string[] = [];
  #seq = 0;

  constructor(
    private readonly dir: string,
    private readonly runChars = RUN_CHARS,
  ) {}

  add(recordId: string, line: number, json: string): void {
    const text = entryLine(recordId, line, json);
    this.#ids.push(recordId);
    this.#lines.push(line);
    this.#texts.push(text);
    this.#chars += text.length;
    if (this.#plain && !isPlainId(recordId)) this.#plain = false;
    if (this.#chars >= this.runChars) this.#spill();
  }

  /** Merge everything added into `dir/source`; later occurrences of an id are dropped and reported. */
  finish(onDuplicate: OnDuplicate): SortedSource {
    const path = join(this.dir, 'source');
    const out = new LineWriter(path);
    try {
      if (this.#runs.length === 0) {
        // It all fit in one run: sort in memory and write the result directly.
        const order = this.#order();
        const merged = this.#memoryCursor(order);
        writeMerged([merged], this.#plain, out, onDuplicate);
      } else {
        this.#spill();
        while (this.#runs.length > FAN_IN) {
          const group = this.#runs.splice(0, FAN_IN);
          const next = this.#newRun();
          const w = new LineWriter(next);
          try {
            writeMerged(group.map((r) => fileCursor(r)), this.#plain, w, null);
          } finally {
            w.close();
          }
          for (const r of group) rmSync(r, { force: true });
          this.#runs.unshift(next); // earlier lines first: its entries win ties
        }
        writeMerged(this.#runs.map((r) => fileCursor(r)), this.#plain, out, onDuplicate);
      }
    } finally {
      out.close();
      this.discardRuns();
    }
    return new SortedSource(path, out.count);
  }

  /** Remove the run files (also when the read is abandoned). */
  discardRuns(): void {
    for (const r of this.#runs) rmSync(r, { force: true });
    this.#runs = [];
    this.#ids = [];
    this.#lines = [];
    this.#texts = [];
  }

  #order(): number[] {
    const ids = this.#ids;
    const order = Array.from({ length: ids.length }, (_, i) => i);
    // Stable: equal ids keep file order, so the earliest line comes first.
    if (this.#plain) order.sort((a, b) => (ids[a]! < ids[b]! ? -1 : ids[a]! > ids[b]! ? 1 : a - b));
    else order.sort((a, b) => compareIds(ids[a]!, ids[b]!) || a - b);
    return order;
  }

  #memoryCursor(order: number[]): Cursor {
    const ids = this.#ids;
    const lines = this.#lines;
    const texts = this.#texts;
    let k = 0;
    return {
      id: '',
      line: 0,
      text: '',
      next() {
        if (k >= order.length) return false;
        const i = order[k++]!;
        this.id = ids[i]!;
        this.line = lines[i]!;
        this.text = texts[i]!;
        return true;
      },
    };
  }

  /** Sort what is held and write it as a run. */
  #spill(): void {
    if (this.#ids.length === 0) return;
    const path = this.#newRun();
    const w = new LineWriter(path);
    try {
      const texts = this.#texts;
      for (const i of this.#order()) w.write(texts[i]!);
    } finally {
      w.close();
    }
    this.#runs.push(path);
    this.#ids = [];
    this.#lines = [];
    this.#texts = [];
    this.#chars = 0;
  }

  #newRun(): string {
    return join(this.dir, `run-${++this.#seq}`);
  }
}

/** A position in a sorted stream of entry lines; `next` moves to the next one (false at the end). */
interface Cursor {
  id: string;
  line: number;
  text: string;
  next(): boolean;
}

function fileCursor(path: string): Cursor {
  const lines = readLines(path);
  return {
    id: '',
    line: 0,
    text: '',
    next() {
      const r = lines.next();
      if (r.done) return false;
      const text = r.value;
      const a = text.indexOf('\t');
      const b = text.indexOf('\t', a + 1);
      this.id = parseIdField(text.slice(0, a));
      this.line = Number(text.slice(a + 1, b));
      this.text = text;
      return true;
    },
  };
}

/**
 * k-way merge of sorted cursors into `out`, in record_id order; among equal
 * ids the cursor given first wins (runs are in file order). With
 * `onDuplicate`, only the first of equal ids is written.
 */
function writeMerged(cursors: Cursor[], plain: boolean, out: LineWriter, onDuplicate: OnDuplicate | null): void {
  const cmp = plain ? (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0) : compareIds;
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
  let lastId: string | null = null;
  let lastLine = 0;
  while (heap.length > 0) {
    const top = cursors[heap[0]!]!;
    if (onDuplicate && lastId !== null && top.id === lastId) onDuplicate(top.id, top.line, lastLine);
    else {
      out.write(top.text);
      lastId = top.id;
      lastLine = top.line;
    }
    if (!top.next()) {
      heap[0] = heap[heap.length - 1]!;
      heap.pop();
    }
    if (heap.length > 0) down(0);
  }
}
