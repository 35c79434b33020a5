import { randomUUID, createHash } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, lstatSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DatasetRecord } from '../../model/record.js';
import type { RecordsMark } from '../../snapshot/store.js';
import { LineWriter, detach, idField, parseIdField, readLines } from '../disk/line-file.js';
import { hasEmptyAttribute, type SkippedRows } from '../executor/source-read.js';
import { COPY, NEXT_SUM, STAMP_FILE, STAMP_TMP, dropStampTmp, readStamp, stampVoid, unstampedWhy, writeStamp, type KeptCheck, type KeptStamp, type RecordsMarker } from './kept-stamp.js';

/**
 * Issue 18's unchanged rows: the rows of the last published export, in file
 * order, each as the text of its cells, so that a row of the next export
 * equal to the one at its place is known to be the same record without
 * mapping, sorting or diffing it. The file is trusted only under its stamp
 * (kept-stamp.ts), written once the plan made of that export was published
 * whole. A file without a matching stamp, or a stamp without a matching file
 * (a crash between the two), is never used.
 *
 * Lines: a head line (JSON: nonce, digest, header), then one line a data row
 * (`<c|e|f|x><cells>\t<id>\t<text>`: c a record, e a record with an empty
 * attribute, f a row the mapping's filters left out (no id), x anything
 * else: a bad row, whose errors are reported at every read, is never equal),
 * then `end\t<rows>`. The digest the head and stamp carry covers the
 * filters as it covers the fields: an equal row under it is filtered again.
 */

/** The file of the last published export's rows, its stamp, and the file a read writes for the next. */
export const KEPT_FILE = 'kept-rows';
export const NEXT_FILE = 'kept-rows.next';

interface KeptHead {
  v: 1;
  nonce: string;
  digest: string;
  header: string | null;
}

/**
 * A row's cells as one text: joined by NUL (a CSV read refuses a NUL byte, and the count of cells is compared
 * beside it, so equal texts of equal counts are equal cells), with backslash and line breaks escaped.
 */
function rowText(cells: readonly string[]): string {
  const t = cells.join('\u0000');
  return ESCAPED.test(t) ? t.replace(ESCAPED, escape) : t;
}
const ESCAPED = /[\\\n\r]/g;
const escape = (c: string): string => (c === '\\' ? '\\\\' : c === '\n' ? '\\n' : '\\r');

/** Why a read is full when the kept rows are not the published export's. */
const FIRST = "nothing saved yet to compare with (normal on a dataset's first sync)";
const NOT_STAMPED = `${COPY} does not match its stamp (a sync stopped while saving it); this sync saves a new one`;
const CHANGED = `${COPY} is not as it was saved (changed on disk since); this sync saves a new one`;

/** The kept copy could not be read (a failing disk, a directory or a pipe in its place): where, and the error's code. */
export interface KeptReadError {
  file: string;
  code: string;
}

function readErrorOf(file: string, err: unknown): KeptReadError {
  const e = err as NodeJS.ErrnoException;
  return { file, code: e.code ?? e.message };
}

const unreadable = (e: KeptReadError): string => `${COPY} could not be read (${e.code}); this sync reads the export in full and saves a new one`;

/**
 * The stamp and the kept file's lines when both are there and agree with the records and settings now; else why not
 * (plainly). A copy that can never be used (no stamp for it, a stamp without it, a stamp of another file, a stamp
 * left half-written) is removed: it only takes disk space, which the copy this sync writes may need.
 */
export function openKept(dir: string, now: RecordsMark, digest: string): { lines: Generator<string>; head: KeptHead; check: KeptCheck } | { reason: string; readError?: KeptReadError } {
  const stampPath = join(dir, STAMP_FILE);
  const file = join(dir, KEPT_FILE);
  const unusable = (reason: string): { reason: string } => {
    try {
      dropKept(dir);
    } catch {
      // Not a file (a restore tool's directory), or not ours: left for a person; no stamp names it, so it is never used.
    }
    return { reason };
  };
  try {
    dropStampTmp(dir);
  } catch {
    // As above (a directory there is removed by the next stampKept).
  }
  const unstamped = existsSync(stampPath) ? null : unstampedWhy(dir);
  if (unstamped !== null) return existsSync(file) ? unusable(unstamped) : { reason: unstamped };
  if (!existsSync(stampPath) && !existsSync(file)) return { reason: FIRST };
  if (!existsSync(stampPath) || !existsSync(file)) return unusable(NOT_STAMPED);
  let stamp: KeptStamp;
  try {
    stamp = readStamp(dir);
  } catch {
    return unusable(`${COPY} has an unreadable stamp; this sync saves a new one`);
  }
  const voided = stampVoid(stamp, now, digest);
  if (voided !== null) return { reason: voided };
  const failed = (readError: KeptReadError): { reason: string; readError: KeptReadError } => ({ ...unusable(unreadable(readError)), readError });
  let size: number;
  try {
    const st = statSync(file);
    // Never opened when not a file: a pipe's open waits for a writer, a directory's read fails.
    if (!st.isFile()) return failed({ file, code: st.isDirectory() ? 'EISDIR' : 'not a regular file' });
    size = st.size;
  } catch (err) {
    return failed(readErrorOf(file, err));
  }
  if (size !== stamp.bytes || typeof stamp.sha256 !== 'string') return unusable(NOT_STAMPED);
  const hash = createHash('sha256');
  const lines = readLines(file, undefined, hash);
  let first: IteratorResult<string>;
  try {
    first = lines.next();
  } catch (err) {
    return failed(readErrorOf(file, err));
  }
  let head: KeptHead;
  try {
    head = JSON.parse(first.done ? '' : first.value) as KeptHead;
  } catch {
    lines.return(undefined);
    return unusable(NOT_STAMPED);
  }
  if (head.nonce !== stamp.nonce || head.digest !== digest) {
    lines.return(undefined);
    return unusable(NOT_STAMPED);
  }
  return { lines, head, check: { hash, sha256: stamp.sha256 } };
}

/**
 * Make the rows a read kept (NEXT_FILE) the published export's: called once its plan was published whole (or
 * there was nothing to publish), with the records' generation then. The file is fsynced and renamed before the
 * stamp naming it is written: a crash in between leaves a stamp of another nonce, so neither is used. The stamp
 * names the records by the mark the database sets for them (none when they were written since: nothing stamped).
 * True when stamped; false when no rows are kept (the next read is full).
 */
export function stampKept(dir: string, records: RecordsMarker, generation: number, digest: string): boolean {
  const next = join(dir, NEXT_FILE);
  const sumPath = join(dir, NEXT_SUM);
  // The stamp there names the copy this one replaces: it goes first, so that whatever fails below leaves none that
  // is stale (a later read would tell the wrong reason for not using it).
  const stampPath = join(dir, STAMP_FILE);
  clearWay(stampPath);
  rmSync(stampPath, { force: true });
  if (!existsSync(next) || !existsSync(sumPath)) {
    // The read kept none (its records are not all its rows', or the copy could not be written): the older rows are no longer the published export's.
    dropNext(dir);
    dropKept(dir);
    return false;
  }
  const sha256 = readFileSync(sumPath, 'utf8').trim();
  const head = JSON.parse(firstLine(next) ?? 'null') as KeptHead | null;
  if (head === null || head.digest !== digest) throw new TypeError(`${next}: not kept under these settings`);
  const fd = openSync(next, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  const file = join(dir, KEPT_FILE);
  clearWay(file);
  clearWay(join(dir, STAMP_TMP));
  renameSync(next, file);
  const marked = records.markRecords(generation);
  if (marked === null) {
    // Written since the publish: these rows are not the records' (the stamp left names another file, so is void too).
    dropKept(dir);
    return false;
  }
  try {
    writeStamp(dir, { nonce: head.nonce, bytes: statSync(file).size, sha256 }, generation, marked, digest);
  } catch (err) {
    // Not stamped (a full disk): the copy is of no use, and the space it takes may be what the next sync needs.
    try {
      dropKept(dir);
    } catch {
      // No stamp names it (removed above), so it is never used; openKept removes it.
    }
    throw err;
  } finally {
    rmSync(sumPath, { force: true });
  }
  return true;
}

/**
 * A directory where the copy, its stamp or the stamp's .tmp goes (a restore tool that got it wrong) is removed: the names are ours, in
 * our own folder, and nothing else there is ever read; left, it would keep every later copy from being saved.
 */
function clearWay(path: string): void {
  let dir = false;
  try {
    dir = lstatSync(path).isDirectory();
  } catch {
    return;
  }
  if (dir) rmSync(path, { recursive: true, force: true });
}

/** The first line of a file (its descriptor closed before returning). */
function firstLine(path: string): string | undefined {
  const lines = readLines(path);
  try {
    const r = lines.next();
    return r.done ? undefined : r.value;
  } finally {
    lines.return(undefined);
  }
}

/** Forget the rows a read kept for the next (its records are not all the kept rows' records). */
export function dropNext(dir: string): void {
  rmSync(join(dir, NEXT_FILE), { force: true });
  rmSync(join(dir, NEXT_SUM), { force: true });
}

/** Forget the kept rows (a stamp is the only thing trusted, so it goes first). */
export function dropKept(dir: string): void {
  rmSync(join(dir, STAMP_FILE), { force: true });
  rmSync(join(dir, KEPT_FILE), { force: true });
}

/** What a read with kept rows found: the rows that differ from the kept ones at their place. */
export interface KeptOutcome {
  /** Null: every row was mapped (no kept rows, or given up); else why not used is in `reason`. */
  fast: { differingIds: string[]; goneIds: string[] } | null;
  reason: string | null;
  /** Rows compared with a kept one and found different (or beyond the kept file). */
  differing: number;
  /** Rows that were records: taken unchanged, or mapped (repeated ids included). */
  records: number;
  /** Rows taken as unchanged (not in the read's sort: a read that gave up after some is not the full read). */
  skipped: number;
  /** Why no copy of this export was kept for the next read (a write to the kept folder failed: a full disk), else null. */
  copyError: string | null;
  /** The last published export's copy could not be read (the read went on in full), else null. */
  readError: KeptReadError | null;
}

/**
 * The read's side of the unchanged rows (SkippedRows): compares each data row with the kept row at its place,
 * and writes every row to NEXT_FILE for the next read. Gives up comparing (every later row is mapped) once more
 * than `maxDiffering` rows differ, or the header differs: the read is the full one when no row was taken as
 * unchanged before (`skipped` 0), else it must be read again.
 */
export class KeptRows implements SkippedRows {
  lastLine = 0;
  emptyAttributes = false;
  #out: LineWriter | null;
  readonly #written = createHash('sha256');
  #copyError: string | null = null;
  #readError: KeptReadError | null = null;
  readonly #dir: string;
  #check: KeptCheck | null;
  readonly #nextPath: string;
  /** A row or id of this file that the kept file cannot hold as it is. */
  #uncomparable = false;
  #old: Generator<string> | null;
  #reason: string | null;
  #ended = false;
  /** The kept row at this place, when not yet consumed. */
  #pending: { cells: number; text: string; id: string | null; empty: boolean; filtered: boolean } | null = null;
  #rows = 0;
  #differing = 0;
  #records = 0;
  #skipped = 0;
  /** Kept rows read ahead (from #head on). */
  #ahead: string[] = [];
  #head = 0;
  readonly #differingIds: string[] = [];
  readonly #goneIds: string[] = [];

  constructor(
    dir: string,
    private readonly digest: string,
    kept: ReturnType<typeof openKept> | null,
    private readonly maxDiffering: number,
  ) {
    this.#dir = dir;
    this.#nextPath = join(dir, NEXT_FILE);
    if (kept === null || 'reason' in kept) {
      this.#old = null;
      this.#check = null;
      this.#reason = kept === null ? 'not asked' : kept.reason;
      this.#readError = kept !== null && kept.readError ? kept.readError : null;
      this.#header = null;
    } else {
      this.#old = kept.lines;
      this.#check = kept.check;
      this.#reason = null;
      this.#header = kept.head.header;
    }
    rmSync(join(dir, NEXT_SUM), { force: true });
    try {
      this.#out = new LineWriter(this.#nextPath, this.#written);
    } catch (err) {
      this.#out = null;
      this.#copyFailed(err);
    }
  }

  /** A line of the copy for the next read; a failed write (a full disk) ends the copy, never the read. */
  #put(line: string): void {
    if (this.#out === null) return;
    try {
      this.#out.write(line);
    } catch (err) {
      this.#copyFailed(err);
    }
  }

  #copyFailed(err: unknown): void {
    const e = err as NodeJS.ErrnoException;
    this.#copyError ??= e.code ?? e.message;
    try {
      this.#out?.abandon();
    } catch {
      // Its descriptor is gone either way.
    }
    this.#out = null;
    try {
      dropNext(this.#dir);
    } catch {
      // Left for openKept or the next read (no stamp names it).
    }
  }

  readonly #header: string | null;

  header(cells: readonly string[]): void {
    const text = rowText(cells);
    this.#put(JSON.stringify({ v: 1, nonce: randomUUID(), digest: this.digest, header: text } satisfies KeptHead));
    if (this.#old !== null && text !== this.#header) this.#giveUp('the header row of the export changed');
  }

  row(cells: readonly string[], line: number): false | 'record' | 'filtered' {
    this.#flush();
    this.#rows++;
    const text = rowText(cells);
    // The next kept row, or one of the WINDOW after it (the rows between were deleted or moved): any match that
    // keeps both files' order is right, as an equal text is the same record whichever place it had.
    for (let k = 0; k <= WINDOW && this.#old !== null; k++) {
      const old = this.#peek(k);
      if (old === null) break;
      if (!sameRow(old, text, cells.length)) continue;
      for (let j = 0; j < k && this.#old !== null; j++) this.#gone(this.#peek(j)!);
      this.#consume(k + 1);
      if (this.#old === null) break;
      this.#put(old);
      this.#skipped++;
      // A row filtered out is no record: neither counted nor the last record's line (importability's line check).
      if (old.charCodeAt(0) === FILTERED_ROW) return 'filtered';
      this.lastLine = line;
      this.#records++;
      if (old.charCodeAt(0) === 0x65) this.emptyAttributes = true;
      return 'record';
    }
    // Not matched: a changed or an inserted row; the kept row stays next until a later row passes it.
    // A lone surrogate (an XLSX `_xD800_`) is written to the kept file as U+FFFD, so no kept row can equal its row
    // (checked here, off the matched rows' path): kept, it would read back as another text.
    if (LONE_SURROGATE.test(text)) this.#uncomparable = true;
    if (this.#old !== null && ++this.#differing > this.maxDiffering) this.#giveUp(`more than ${this.maxDiffering} rows changed (a large change is read in full)`);
    this.#pending = { cells: cells.length, text, id: null, empty: false, filtered: false };
    return false;
  }

  filtered(): void {
    if (this.#pending !== null) this.#pending.filtered = true;
  }

  mapped(record: DatasetRecord): void {
    const p = this.#pending;
    if (p === null) return;
    p.id = record.record_id;
    if (LONE_SURROGATE.test(p.id)) this.#uncomparable = true;
    this.#records++;
    p.empty = hasEmptyAttribute(record);
    if (this.#old !== null) this.#differingIds.push(record.record_id);
  }

  /** After the read (whether or not it was refused): the kept rows beyond the file's are gone; the next file is closed. */
  finish(): KeptOutcome {
    this.#flush();
    this.#put(`end\t${this.#rows}`);
    if (this.#out !== null) {
      try {
        this.#out.close();
        this.#out = null;
        // Rows that would read back otherwise than they are: none is kept, so the next export is read in full (stampKept drops the older rows).
        if (this.#uncomparable) dropNext(this.#dir);
        else writeFileSync(join(this.#dir, NEXT_SUM), this.#written.digest('hex'), { mode: 0o600 });
      } catch (err) {
        this.#copyFailed(err);
      }
    }
    if (this.#old !== null) {
      for (let old = this.#peek(0); old !== null && this.#old !== null; old = this.#peek(0)) {
        this.#gone(old);
        this.#consume(1);
      }
      if (!this.#ended) this.#giveUp(`${COPY} is cut short; this sync saves a new one`);
    }
    const fast = this.#old !== null ? { differingIds: this.#differingIds, goneIds: this.#goneIds } : null;
    return { fast, reason: this.#reason, differing: this.#differing, records: this.#records, skipped: this.#skipped, copyError: this.#copyError, readError: this.#readError };
  }

  #flush(): void {
    const p = this.#pending;
    if (p === null) return;
    this.#pending = null;
    const flag = !joinedOnce(p.text, p.cells) ? 'x' : p.filtered ? 'f' : p.id === null ? 'x' : p.empty ? 'e' : 'c';
    this.#put(`${flag}${p.cells}\t${p.id === null ? '' : idField(p.id)}\t${p.text}`);
  }

  /** The k-th kept row not yet matched or gone (read ahead as needed); null past the end. */
  #peek(k: number): string | null {
    while (this.#ahead.length - this.#head <= k) {
      if (this.#old === null || this.#ended) return null;
      let r: IteratorResult<string>;
      try {
        r = this.#old.next();
      } catch (err) {
        this.#readFailed(err);
        return null;
      }
      if (r.done) {
        this.#giveUp(`${COPY} is cut short; this sync saves a new one`);
        return null;
      }
      if (r.value.startsWith('end\t')) {
        this.#ended = true;
        // Read on to the file's end (which closes it): its bytes must be the ones stamped, and nothing after `end`.
        let rest: IteratorResult<string>;
        try {
          rest = this.#old.next();
        } catch (err) {
          this.#readFailed(err);
          return null;
        }
        if (!rest.done || this.#check === null || this.#check.hash.digest('hex') !== this.#check.sha256) this.#giveUp(CHANGED);
        return null;
      }
      this.#ahead.push(r.value);
    }
    return this.#ahead[this.#head + k]!;
  }

  #consume(n: number): void {
    this.#head += n;
    if (this.#head > 1024) {
      this.#ahead.splice(0, this.#head);
      this.#head = 0;
    }
  }

  /** A kept row no row of the file matched: its record is gone, unless the file lists it at another place (a changed row). */
  #gone(old: string): void {
    const a = old.indexOf('\t');
    const field = old.slice(a + 1, old.indexOf('\t', a + 1));
    // An `f` row, and an `x` row without an id, was no record; an `x` one with an id (a cell holding a NUL) was, and may be gone.
    if ((old.charCodeAt(0) === 0x78 || old.charCodeAt(0) === FILTERED_ROW) && field === '') return;
    let id: string;
    try {
      id = detach(parseIdField(field));
    } catch {
      // Not a line this code wrote (changed on disk; its sum, checked at the end, would say so too).
      this.#giveUp(CHANGED);
      return;
    }
    this.#goneIds.push(id);
    if (this.#goneIds.length > this.maxDiffering) this.#giveUp(`more than ${this.maxDiffering} rows were removed (a large change is read in full)`);
  }

  /**
   * The copy failed while read (a disk error): given up as any other give-up (rows taken unchanged before are read
   * again in full), and its stamp removed at once, so that nothing of a copy that failed is trusted again; the
   * next publish writes a new one.
   */
  #readFailed(err: unknown): void {
    const e = readErrorOf(join(this.#dir, KEPT_FILE), err);
    this.#readError ??= e;
    // The generator that threw is done (its descriptor closed): giving up only lets go of it.
    this.#giveUp(unreadable(e));
    try {
      rmSync(join(this.#dir, STAMP_FILE), { force: true });
    } catch {
      // No stamp that names this sync's copy is written over a failed one but by stampKept.
    }
  }

  #giveUp(reason: string): void {
    if (this.#old === null) return;
    this.#old.return(undefined);
    this.#old = null;
    this.#ahead.length = 0;
    this.#head = 0;
    this.#reason = reason;
    this.#differingIds.length = 0;
    this.#goneIds.length = 0;
  }
}

/** A UTF-16 code unit of a surrogate pair standing alone (UTF-8 cannot hold it). */
const LONE_SURROGATE = /\p{Cs}/u;

/** Kept rows looked past for one equal to a row of the file (rows deleted or moved away). */
const WINDOW = 16;

/** The flag of a kept row the mapping's filters left out (`f`). */
const FILTERED_ROW = 0x66;

/** Whether a kept row (not an `x` one) holds the row of these cells. */
function sameRow(old: string, text: string, cells: number): boolean {
  if (old.charCodeAt(0) === 0x78 || !old.endsWith(text)) return false;
  const a = old.indexOf('\t');
  return old.charCodeAt(old.length - text.length - 1) === 0x09 && old.indexOf('\t', a + 1) === old.length - text.length - 1 && old.slice(1, a) === String(cells);
}

/** Whether a row text holds no NUL but its joins (a UTF-16 file's cell may hold one): else it is never taken as equal. */
function joinedOnce(text: string, cells: number): boolean {
  let at = -1;
  for (let i = 1; i < cells; i++) if ((at = text.indexOf('\u0000', at + 1)) === -1) return false;
  return text.indexOf('\u0000', at + 1) === -1;
}
