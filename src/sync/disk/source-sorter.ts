import { rmSync } from 'node:fs';
import { join } from 'node:path';
import type { DatasetRecord } from '../../model/record.js';
import { recordJson } from '../../model/record-json.js';
import { compareIds, isPlainId, plainCompare } from '../../model/snapshot-reader.js';
import { ValueFlagsWriter } from '../core/record-values.js';
import { baseFlags } from '../core/value-guards.js';
import { entryLine } from './entry-line.js';
import { ChunkWriter } from './line-file.js';
import { IdRunWriter, repeatedIds } from './id-runs.js';
import { mergeRounds } from './run-merge.js';
import { MEMORY_CHARS, RUN_BYTES, SortedSource, type OnDuplicate } from './sorted-source.js';
import type { SourceEntry } from '../core/changeset.js';

/**
 * Sorts source entries given in file order into a SortedSource in `dir`.
 * A run's entries are held as UTF-8 in one buffer outside the JS heap (only
 * their ids stay on it, for sorting): kept as strings they would live long
 * enough to reach V8's old generation, which is collected too seldom to give
 * the memory back between runs (a peak of 400 MB at 1,000,000 records).
 * Beside each run goes its ids alone, so that repeated ids are found by
 * merging those (a tenth of the bytes) rather than the whole runs.
 *
 * A source that stays small (up to `memoryChars` of entry text, and a third
 * of a run) never goes to disk: its entries are kept as they were given,
 * sorted in memory, and read from there (SortedSource's held entries). A
 * feed's stock file of 10,000 rows spent a third of its read, merge and diff
 * encoding, writing and parsing back its runs (issue 13). Past that size the
 * entries held so far are encoded into the buffer and the sort goes on as above.
 */
export class SourceSorter {
  #buf: Buffer;
  #out = releasable(OUT_CHUNK);
  #idOut = releasable(ID_CHUNK);
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
  /** Entries held as given while the source is small; null once they went into #buf. */
  #held: SourceEntry[] | null = [];
  #heldChars = 0;
  readonly #maxHeld: number;

  constructor(
    private readonly dir: string,
    private readonly runBytes = RUN_BYTES,
    /** Characters of entries kept in memory at most (0: every source goes through runs on disk). */
    memoryChars = MEMORY_CHARS,
  ) {
    this.#maxHeld = Math.min(memoryChars, Math.floor(runBytes / 3));
    // The buffer is made when the first entry goes into it (none for a source held in memory).
    this.#buf = NO_BUFFER;
    if (this.#maxHeld <= 0) this.#unhold();
  }

  /**
   * A mapped record: its canonical JSON, with the value guards' flags of its values beside it (so the diff
   * does not read them from the text). Only this sorter's own writer puts flags in its runs: they are read
   * with its shapes (SortedSource.shapes), never another's.
   */
  addRecord(rec: DatasetRecord, line: number): void {
    this.#add(rec.record_id, line, recordJson(rec), this.#flags.of(rec));
  }

  /**
   * A record as its canonical JSON (its values are read from the text when it is compared). `record`: JSON.parse
   * of it, key for key (parsesBackAs), kept beside it while the source is held in memory (the diff then need not parse it).
   */
  add(recordId: string, line: number, json: string, record?: DatasetRecord): void {
    this.#add(recordId, line, json, undefined, record);
  }

  #add(recordId: string, line: number, json: string, flags: string | undefined, record?: DatasetRecord): void {
    const held = this.#held;
    if (held !== null) {
      this.#heldChars += recordId.length + json.length + (flags === undefined ? 0 : flags.length) + ENTRY_CHARS;
      held.push(flags !== undefined ? { record_id: recordId, line, json, flags } : record !== undefined ? { record_id: recordId, line, json, record } : { record_id: recordId, line, json });
      this.#added++;
      if (this.#plain && !isPlainId(recordId)) this.#plain = false;
      if (this.#heldChars > this.#maxHeld) this.#unhold();
      return;
    }
    this.#encode(recordId, line, json, flags);
    this.#added++;
  }

  /** The entries held so far into #buf (the source outgrew memory): the sort goes on through runs. */
  #unhold(): void {
    const held = this.#held ?? [];
    this.#held = null;
    this.#buf = releasable(Math.min(FIRST_BYTES, Math.max(this.runBytes, 1024)), Math.max(this.runBytes, 1024));
    for (const e of held) this.#encode(e.record_id, e.line, e.json, e.flags);
  }

  #encode(recordId: string, line: number, json: string, flags: string | undefined): void {
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
    if (this.#held !== null) {
      const entries = this.#sortHeld(report);
      this.#release();
      return SortedSource.held(entries, this.#plain, this.#flags.shapes);
    }
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
    const idRuns = this.#idRuns;
    this.#idRuns = [];
    repeatedIds(idRuns, report, () => this.#newRun(), Buffer.allocUnsafe(ID_CHUNK));
    return new SortedSource(this.#runs, this.#added - dups, this.#plain, this.#flags.shapes);
  }

  /** The held entries in record_id order (stable: the earliest line of an id first), later ones of an id reported and left out. */
  #sortHeld(onDuplicate: OnDuplicate): SourceEntry[] {
    const held = this.#held!;
    this.#held = null;
    if (this.#plain) held.sort((a, b) => (a.record_id < b.record_id ? -1 : a.record_id > b.record_id ? 1 : 0));
    else held.sort((a, b) => compareIds(a.record_id, b.record_id));
    const out: SourceEntry[] = [];
    let last: SourceEntry | null = null;
    for (const e of held) {
      if (last !== null && e.record_id === last.record_id) onDuplicate(e.record_id, e.line, last.line);
      else out.push((last = e));
    }
    return out;
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
    this.#held = null;
    this.#clear();
    this.#ids = [];
    this.#order = [];
    release(this.#buf);
    release(this.#out);
    release(this.#idOut);
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
    const file = new ChunkWriter(path, this.#out);
    let last = -1;
    // An entry line starts with its id as idField writes it: its UTF-8 bytes, copied from there, unless escaped.
    const idRun = onDuplicate ? null : new IdRunWriter(`${path}.ids`, this.#idOut);
    try {
      for (const i of order) {
        if (onDuplicate && last >= 0 && ids[i] === ids[last]) {
          onDuplicate(ids[i]!, lines[i]!, lines[last]!);
          continue;
        }
        const from = starts[i]!;
        const end = i + 1 < n ? starts[i + 1]! : this.#used;
        file.put(buf, from, end);
        if (idRun) {
          if (buf[from] === QUOTE) {
            const bytes = Buffer.from(ids[i]!, 'utf8');
            idRun.put(bytes, 0, bytes.length, lines[i]!);
          } else {
            let tab = from;
            while (buf[tab] !== TAB) tab++;
            idRun.put(buf, from, tab, lines[i]!);
          }
        }
        last = i;
      }
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
/** Bytes of an id run written at a time. */
const ID_CHUNK = 1 << 18;
const TAB = 0x09;
/** An id field that starts with a quote is escaped (idField). */
const QUOTE = 0x22;

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
const NO_BUFFER = Buffer.alloc(0);
/** Characters counted for an entry held in memory beyond its id, JSON and flags (its line number, the line's separators). */
const ENTRY_CHARS = 16;
