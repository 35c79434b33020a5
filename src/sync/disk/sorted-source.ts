import { chmodSync, copyFileSync, linkSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { compareIds, plainCompare } from '../../model/snapshot-reader.js';
import type { SourceEntry } from '../core/changeset.js';
import { entryLine, readEntries } from './entry-line.js';
import { LineWriter } from './line-file.js';
import { fileCursor, mergeCursors } from './run-merge.js';

/**
 * The records of one export sorted by record_id (byte order, A7) on disk, so
 * that a diff of any size merge-joins them with the snapshot in bounded
 * memory (issue 18). An external merge sort: records are kept in memory up to
 * a run's worth of bytes, sorted and written as a run; the runs are merged
 * as they are read. A repeated record_id is found by merging the runs' ids
 * (equal ids meet), the earliest line kept. The sort is source-sorter.ts,
 * the merge of its runs run-merge.ts, their line format entry-line.ts.
 *
 * Measured against spilling into a SQLite table and letting it sort (ORDER BY
 * or an index) on 1,000,000 records: SQLite's insert, sort and read cost
 * about 1.5× a bare csv-parse of the export on their own, these runs ~0.2×.
 */

/** Bytes of records held in memory before a run goes to disk. */
export const RUN_BYTES = 16 * 1024 * 1024;

/**
 * Characters of entries (id, JSON, value flags) a source may have and be
 * sorted and kept in memory, never written as runs (source-sorter.ts): a
 * stock file of 25,000 rows, a catalogue of 15,000 records (8-12 MB of heap).
 */
export const MEMORY_CHARS = 4 * 1024 * 1024;

/**
 * Source entries in record_id order: the sorted runs of an external sort,
 * merged as they are read (the first of equal ids wins: runs are in file
 * order). One file when the export fit in one run; none when it was small
 * enough to be kept in memory (`held`, sorted, no repeats), written as one
 * run only when linked into a changeset folder.
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
    /** The entries themselves, in record_id order, when they were kept in memory (no runs). */
    private readonly held: readonly SourceEntry[] | null = null,
  ) {}

  /** Entries sorted in memory (source-sorter.ts), in record_id order without repeats. */
  static held(entries: readonly SourceEntry[], plain: boolean, shapes: readonly (readonly string[])[]): SortedSource {
    return new SortedSource([], entries.length, plain, shapes, entries);
  }

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
    if (this.held !== null) {
      yield* this.held;
      return;
    }
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
    if (this.held !== null) {
      // Held in memory: written as the one run a sort of its size would have made.
      const run = new LineWriter(join(dir, `${name}-0001`));
      try {
        for (const e of this.held) run.write(entryLine(e.record_id, e.line, e.json, e.flags));
      } finally {
        run.close();
      }
      return;
    }
    this.runs.forEach((r, i) => linkOrCopy(r, join(dir, `${name}-${String(i + 1).padStart(4, '0')}`)));
  }
}

/** A record_id met again, at `line`; `first`: the line it was first met at. */
export type OnDuplicate = (recordId: string, line: number, first: number) => void;


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
