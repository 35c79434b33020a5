import { rmSync } from 'node:fs';
import { CursorHeap } from './cursor-heap.js';
import { FLAGS_MARK, lineField } from './entry-line.js';
import { LineWriter, parseIdField, readLines } from './line-file.js';

/**
 * The merge of an external sort's runs (sorted-source.ts): sorted streams of
 * entry lines read a chunk at a time and merged by record_id with a heap,
 * in rounds when there are more runs than files opened at once.
 */

/** Runs merged at once (open files); more are merged in rounds first. */
const FAN_IN = 64;

/** A position in a sorted stream of lines (`id<TAB>line<TAB>…`); `next` moves to the next one (false at the end). */
export interface Cursor {
  id: string;
  line: number;
  text: string;
  /** Where the JSON starts in `text`. */
  jsonAt: number;
  /** Where the value flags start in `text` (after their mark), or -1. */
  flagsAt: number;
  next(): boolean;
}

export function fileCursor(path: string): Cursor {
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
      this.line = lineField(text, a + 1, b);
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
export function mergeCursors(cursors: Cursor[], cmp: (a: string, b: string) => number, dedupe: boolean): () => Cursor | null {
  const heap = new CursorHeap(cursors, (x, y) => {
    const c = cmp(cursors[x]!.id, cursors[y]!.id);
    return c < 0 || (c === 0 && x < y);
  });
  let pending = false; // the cursor handed out last: moved on at the next call
  let lastId: string | null = null;
  return () => {
    for (;;) {
      if (pending) {
        heap.advance();
        pending = false;
      }
      const i = heap.top();
      if (i < 0) return null;
      pending = true;
      const top = cursors[i]!;
      if (dedupe && lastId !== null && top.id === lastId) continue;
      lastId = top.id;
      return top;
    }
  };
}

/** Merge runs `FAN_IN` at a time until at most that many are left (they are all opened at once to merge). */
export function mergeRounds(runs: string[], cmp: (a: string, b: string) => number, dedupe: boolean, newRun: () => string): string[] {
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
