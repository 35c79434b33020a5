import { chmodSync, closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { DatasetRecord } from '../../model/record.js';
import { recordJson } from '../../model/record-json.js';
import { compareIds } from '../../model/snapshot-reader.js';
import {
  HEAD_OPERATIONS,
  type Changeset,
  type ChangesetSink,
  type ChangesetHead,
  type ChangesetSummary,
  type RecordChange,
  type RecordDelete,
  type RecordText,
  type SourceEntry,
} from '../core/changeset.js';
import { LineWriter, detach, idField, parseIdField, readLines } from './line-file.js';
import { entryLine, readEntries } from './entry-line.js';
import { SortedSource } from './sorted-source.js';

/**
 * A changeset on disk (issue 18): one folder holding the sorted source and the
 * operations the diff found, each a file in record_id order. A sync writes it
 * beside its plan file, so that resume and approve send exactly what was
 * planned without the export and without holding it in memory:
 *
 *   source-N  the export's records, sorted runs (sorted-source.ts)
 *   adds      records to add (source entry lines)
 *   changes   RecordChange as JSON, one a line
 *   deletes   record_id, tab, 1 when owned
 *   adopted   record_ids adopted as owned
 *   desired   records whose desired content is not the source's (kept foreign fields)
 *   listed    only for an indexed diff (issue 13): the snapshot records it read; the source holds their desired
 *             records, every other snapshot record is desired as it is
 */

const FILES = ['adds', 'changes', 'deletes', 'adopted', 'desired'] as const;
type Writers = Record<(typeof FILES)[number], LineWriter>;

/** Writes one diff's changeset into `dir` (made 0700), the sorted source linked in. */
export class ChangesetFiles implements ChangesetSink {
  readonly #w: Writers;
  readonly #head: ChangesetHead = { adds: [], changes: [], deletes: [] };

  constructor(
    readonly dir: string,
    source: SortedSource,
  ) {
    makePrivateDir(dir);
    source.linkInto(dir);
    this.#w = Object.fromEntries(FILES.map((f) => [f, new LineWriter(join(dir, f))])) as Writers;
  }

  add(e: SourceEntry): void {
    this.#w.adds.write(entryLine(e.record_id, e.line, e.json));
    if (this.#head.adds.length < HEAD_OPERATIONS) this.#head.adds.push(JSON.parse(e.json) as DatasetRecord);
  }
  change(c: RecordChange, line: number, recordText?: string): void {
    if (recordText === undefined) this.#w.changes.write(JSON.stringify(line > 0 ? { ...c, line } : c));
    else {
      // JSON.stringify's text of the same object, its record spliced in as given (the keys in RecordChange's order).
      const head = JSON.stringify({ record_id: c.record_id, fields: c.fields, patch: c.patch });
      this.#w.changes.write(`${head.slice(0, -1)},"record":${recordText},"adopted":${c.adopted}${line > 0 ? `,"line":${line}` : ''}}`);
    }
    if (this.#head.changes.length < HEAD_OPERATIONS) this.#head.changes.push(c);
  }
  delete(d: RecordDelete): void {
    this.#w.deletes.write(`${idField(d.record_id)}\t${d.owned ? 1 : 0}`);
    if (this.#head.deletes.length < HEAD_OPERATIONS) this.#head.deletes.push({ record_id: detach(d.record_id), owned: d.owned });
  }
  adopt(recordId: string): void {
    this.#w.adopted.write(idField(recordId));
  }
  desired(recordId: string, record: DatasetRecord): void {
    this.#w.desired.write(entryLine(recordId, 0, recordJson(record)));
  }

  /** Close the files; the changeset reads them from here on. */
  finish(summary: Omit<ChangesetSummary, 'head'>): Changeset {
    this.close();
    return { ...summary, head: this.#head, ...changesetData(this.dir) };
  }

  close(): void {
    for (const f of FILES) this.#w[f].close();
  }
}

/** The lists of a changeset folder, each read from disk as it is iterated. */
export function changesetData(dir: string): Pick<Changeset, 'records' | 'adds' | 'addTexts' | 'changes' | 'deletes' | 'adopted' | 'folder' | 'listed'> {
  const file = (name: string) => join(dir, name);
  const listed = existsSync(file(LISTED))
    ? {
        listed: iterable(function* () {
          for (const line of readLines(file(LISTED))) yield parseIdField(line);
        }),
      }
    : {};
  return {
    ...listed,
    folder: dir,
    records: iterable(() => desiredRecords(SortedSource.inFolder(dir).entries(), readEntries(file('desired')))),
    adds: iterable(function* () {
      for (const e of readEntries(file('adds'))) yield JSON.parse(e.json) as DatasetRecord;
    }),
    addTexts: iterable(function* () {
      for (const e of readEntries(file('adds'))) yield { record_id: e.record_id, json: e.json, line: e.line };
    }),
    changes: iterable(function* () {
      for (const line of readLines(file('changes'))) yield JSON.parse(line) as RecordChange;
    }),
    deletes: iterable(function* () {
      for (const line of readLines(file('deletes'))) {
        const tab = line.lastIndexOf('\t');
        yield { record_id: parseIdField(line.slice(0, tab)), owned: line.slice(tab + 1) === '1' };
      }
    }),
    adopted: iterable(function* () {
      for (const line of readLines(file('adopted'))) yield parseIdField(line);
    }),
  };
}

/** The file of an indexed diff's changeset naming the snapshot records it read (Changeset.listed). */
const LISTED = 'listed';

/** Mark a changeset folder as an indexed diff's: the snapshot records it read, in record_id order. */
export function writeListed(dir: string, ids: Iterable<string>): void {
  const w = new LineWriter(join(dir, LISTED));
  try {
    for (const id of ids) w.write(idField(id));
  } finally {
    w.close();
  }
}

/** The file lines of record ids, from a changeset folder's sorted source. */
export function changesetLines(dir: string, ids: Iterable<string>): Map<string, number> {
  return existsSync(dir) ? SortedSource.inFolder(dir).linesOf(ids) : new Map();
}

/** The source entries with the desired ones in their place (both in record_id order). */
function* desiredRecords(source: Iterable<SourceEntry>, desired: Iterable<SourceEntry>): Generator<RecordText> {
  const d = desired[Symbol.iterator]();
  let next = d.next();
  for (const e of source) {
    while (!next.done && compareIds(next.value.record_id, e.record_id) < 0) next = d.next();
    if (!next.done && next.value.record_id === e.record_id) yield { record_id: e.record_id, json: next.value.json };
    else yield { record_id: e.record_id, json: e.json };
  }
}

function iterable<T>(make: () => Iterator<T>): Iterable<T> {
  return { [Symbol.iterator]: make };
}

/**
 * Keep a changeset folder as the one of a plan: its files fsynced, then moved
 * to `to` (beside the plan file, which is written after it) with the folder
 * holding it fsynced, so a plan file never names a changeset lost in a crash.
 */
export function persistChangeset(from: string, to: string): void {
  for (const name of readdirSync(from)) {
    const fd = openSync(join(from, name), 'r');
    try {
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }
  rmSync(to, { recursive: true, force: true });
  renameSync(from, to);
  const dfd = openSync(join(to, '..'), 'r');
  try {
    fsyncSync(dfd);
  } finally {
    closeSync(dfd);
  }
}

/** A folder only its owner can enter, whatever the umask (it holds the shop's records). */
export function makePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}
