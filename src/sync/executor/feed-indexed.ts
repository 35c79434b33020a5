import type { DatasetConfig } from '../../config/schema.js';
import type { FeedState } from '../../feeds/state.js';
import type { DatasetRecord, RecordField } from '../../model/record.js';
import { compareIds, type SnapshotEntry } from '../../model/snapshot-reader.js';
import type { SnapshotStore } from '../../snapshot/store.js';
import type { Changeset } from '../core/changeset.js';
import { diffOptionsOf } from '../core/diff.js';
import { mergeByIndex, withUnlisted, type FieldBases } from '../core/listed-share.js';
import type { PlanFeed } from '../core/plan.js';
import { NONZERO, ZEROABLE } from '../core/record-values.js';
import { baseFlags, FieldBaseCounts } from '../core/value-guards.js';
import { writeListed } from '../disk/changeset-files.js';
import { diffSource } from '../disk/diff-source.js';
import { MEMORY_CHARS, type SortedSource } from '../disk/sorted-source.js';
import type { ExecContext } from './context.js';
import { join } from 'node:path';
import { parseFields } from '../../model/fields.js';
import { LineWriter, idField, parseIdField, readLines } from '../disk/line-file.js';

/**
 * Issue 13's indexed merge and diff (listed-share.ts decides when): a feed
 * file that leaves the records it does not list as they are is merged with,
 * and diffed against, only the snapshot records it lists, looked up through
 * the primary key; the rest are put back into the counts (withUnlisted).
 */

/** Which merge a feed file takes: chosen by its listed share, or (tests, the bench) asked for. */
export type MergePath = 'indexed' | 'full';

/** What an indexed merge read, for its diff: the snapshot ids it read, and the snapshot's counts as a whole. */
export interface Listed {
  /** In record_id byte order: the file's ids, and under ownership: full every not-owned record (each is adopted). */
  ids: string[];
  total: { total: number; owned: number };
  /** The owned records' value-guard bases as the snapshot keeps them (tallies.ts); null: not kept, counted by a scan. */
  bases: FieldBases | null;
  /**
   * The snapshot entries the merge read, kept for the diff (read once from SQLite, not twice): in memory
   * (`kept`) while they are few (MEMORY_CHARS, as a small source is, sorted-source.ts), else in this file.
   */
  file: string;
  /** Set by listedEntries: the entries it read, or null when they went to `file`. */
  kept?: SnapshotEntry[] | null;
  /** Characters of entries kept in memory at most (0: always the file). */
  memoryChars: number;
}

/** The snapshot records an indexed merge reads (null: the full merge), with the ids it reads. */
export function listedRead(ctx: ExecContext, ds: DatasetConfig, feed: PlanFeed, read: SortedSource, dir: string, path?: MergePath, memoryChars = MEMORY_CHARS): Listed | null {
  if (path === 'full' || feed.role === 'full' || read.count < 0) return null;
  const kept = ctx.store.tallies();
  const total = kept ? { total: kept.records, owned: kept.owned } : ctx.store.counts();
  const missing = ds.feeds[feed.name]!.missing?.strategy ?? 'leave';
  if (path === undefined && !mergeByIndex({ role: feed.role, missing, rows: read.count, records: total.total })) return null;
  if (feed.role === 'update' && missing !== 'leave') throw new TypeError(`feed ${feed.name}: missing: ${missing} changes records the file does not list; it has no indexed merge`);
  const rows: string[] = [];
  for (const e of read.entries()) rows.push(e.record_id);
  const ids = ctx.policy.ownership === 'full' ? union(rows, ctx.store.notOwnedIds()) : rows;
  return { ids, total, bases: kept?.bases ?? null, file: join(dir, `listed-${feed.name}`), memoryChars };
}

/** The snapshot entries of the listed ids, counting what was read, and kept in the listed file for the diff. */
export function* listedEntries(store: SnapshotStore, l: Listed, seen: { records: number; owned: number }): Generator<SnapshotEntry> {
  const kept: SnapshotEntry[] = [];
  let chars = 0;
  let file: LineWriter | null = null;
  const write = (e: SnapshotEntry) => file!.write(`${idField(e.record_id)}\t${e.owned ? 1 : 0}\t${e.foreignFields.length > 0 ? JSON.stringify(e.foreignFields) : ''}\t${e.json}`);
  try {
    for (const read of store.entriesOf(l.ids)) {
      const e = new ParsedOnce(read);
      seen.records++;
      if (e.owned) seen.owned++;
      if (file !== null) write(e);
      else {
        kept.push(e);
        chars += e.record_id.length + e.json.length + KEPT_ENTRY_CHARS;
        if (chars > l.memoryChars) {
          file = new LineWriter(l.file);
          for (const k of kept) write(k);
          kept.length = 0;
        }
      }
      yield e;
    }
    l.kept = file === null ? kept : null;
  } finally {
    file?.close();
  }
}

/** A snapshot entry whose record is parsed once, when first asked: the merge and then the diff read it (kept in memory). */
class ParsedOnce implements SnapshotEntry {
  readonly record_id: string;
  readonly json: string;
  readonly owned: boolean;
  readonly foreignFields: readonly RecordField[];
  #record: DatasetRecord | undefined;

  constructor(e: SnapshotEntry) {
    this.record_id = e.record_id;
    this.json = e.json;
    this.owned = e.owned;
    this.foreignFields = e.foreignFields;
  }

  get record(): DatasetRecord {
    return (this.#record ??= JSON.parse(this.json) as DatasetRecord);
  }
}

/** Characters counted for a kept entry beyond its id and JSON (its flags, foreign fields and separators, about). */
const KEPT_ENTRY_CHARS = 16;

/** The entries listedEntries kept, counting them (and the owned ones' value-guard bases, in `bases`). */
function* keptEntries(l: Listed, seen: { records: number; owned: number }, bases: FieldBaseCounts): Generator<SnapshotEntry> {
  if (l.kept) {
    for (const e of l.kept) {
      seen.records++;
      if (e.owned) {
        seen.owned++;
        // Parsed by the merge already (ParsedOnce), which an owned record is given to.
        if (e.record) bases.addRecord(e.record);
        else bases.add(e.json);
      }
      yield e;
    }
    return;
  }
  for (const line of readLines(l.file)) {
    const a = line.indexOf('\t');
    const b = line.indexOf('\t', a + 2);
    const c = line.indexOf('\t', b + 1);
    const owned = line.charCodeAt(a + 1) === 0x31;
    seen.records++;
    const json = line.slice(c + 1);
    if (owned) {
      seen.owned++;
      bases.add(json);
    }
    yield { record_id: parseIdField(line.slice(0, a)), owned, foreignFields: c > b + 1 ? parseFields(line.slice(b + 1, c)) : [], json };
  }
}

/** The feed state of the listed records only (a merge of them reads no other). */
export function listedState(state: FeedState, l: Listed): Pick<FeedState, 'valuesOf' | 'othersThan'> {
  return {
    valuesOf: (fields) => state.valuesOfIds(fields, l.ids),
    othersThan: () => {
      throw new TypeError('a full feed has no indexed merge');
    },
  };
}

/** Owned snapshot records the indexed merge did not read: each is desired unchanged, so changeable. */
export function unlistedOwned(l: Listed, seen: { owned: number }): number {
  return l.total.owned - seen.owned;
}

/**
 * The diff of an indexed merge's records against the snapshot records it
 * read, with the others put back (their counts, and their values in the
 * value guards' bases), into a changeset whose folder names what was read
 * (a replace streams the rest from the snapshot, ownership.ts).
 */
export async function diffListed(ctx: ExecContext, sorted: SortedSource, l: Listed, dir: string): Promise<Changeset> {
  const options = diffOptionsOf(ctx.policy);
  const seen = { records: 0, owned: 0 };
  const read = new FieldBaseCounts();
  const cs = await diffSource(sorted, { entries: () => keptEntries(l, seen, read) }, options, dir);
  const fields = Object.keys(cs.values?.fields ?? {});
  const bases = fields.length === 0 ? {} : l.bases ? keptBases(l.bases, read.bases(), fields) : unlistedBases(ctx.store, fields, l.ids);
  writeListed(cs.folder!, l.ids);
  const unlisted = { records: l.total.total - seen.records, owned: l.total.owned - seen.owned, bases };
  return { ...withUnlisted(cs, unlisted, options.ownership), listed: l.ids };
}

/** The value-guard bases of the owned records not read, per field: the snapshot's kept bases less those of the ones read. */
function keptBases(all: FieldBases, read: FieldBases, fields: readonly string[]): FieldBases {
  const out: FieldBases = {};
  for (const f of fields) out[f] = { zeroable: (all[f]?.zeroable ?? 0) - (read[f]?.zeroable ?? 0), nonzero: (all[f]?.nonzero ?? 0) - (read[f]?.nonzero ?? 0) };
  return out;
}

/**
 * The value-guard bases (baseFlags) of the owned records not among `ids`, per field, when the snapshot keeps none: SQLite reads each
 * field's value out of the stored JSON and counts the distinct ones. A key SQLite's JSON path cannot name
 * exactly is read by parsing the records here instead.
 */
function unlistedBases(store: SnapshotStore, fields: readonly string[], ids: readonly string[]): FieldBases {
  const out: FieldBases = {};
  const slow: string[] = [];
  for (const f of fields) {
    const path = jsonPathOf(f);
    if (path === null) {
      slow.push(f);
      continue;
    }
    const b = (out[f] = { zeroable: 0, nonzero: 0 });
    const add = (rows: Array<{ value: string | null; n: number }>, sign: number) => {
      for (const { value, n } of rows) {
        const flags = baseFlags(value === null ? undefined : JSON.parse(value));
        if (flags & ZEROABLE) b.zeroable += sign * n;
        if (flags & NONZERO) b.nonzero += sign * n;
      }
    };
    add(store.ownedValueCounts(path), 1);
    add(store.ownedValueCounts(path, ids), -1);
  }
  if (slow.length > 0) {
    const read = new Set(ids);
    for (const f of slow) out[f] = { zeroable: 0, nonzero: 0 };
    for (const e of store.reader().entries()) {
      if (!e.owned || read.has(e.record_id)) continue;
      const rec = JSON.parse(e.json) as DatasetRecord;
      for (const f of slow) {
        const flags = baseFlags(f.startsWith('attributes.') ? rec.attributes?.[f.slice(11)] : (rec as unknown as Record<string, unknown>)[f]);
        if (flags & ZEROABLE) out[f]!.zeroable++;
        if (flags & NONZERO) out[f]!.nonzero++;
      }
    }
  }
  return out;
}

/** The SQLite JSON path of a field (`attributes.<key>` or a top-level field); null for a key it cannot quote. */
function jsonPathOf(field: string): string | null {
  const [prefix, key] = field.startsWith('attributes.') ? ['$.attributes.', field.slice(11)] : ['$.', field];
  return /^[^"\\\u0000-\u001f]+$/.test(key) ? `${prefix}"${key}"` : null;
}

/** Two lists in record_id order as one, without repeats. */
function union(a: readonly string[], b: readonly string[]): string[] {
  if (b.length === 0) return [...a];
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    const c = i === a.length ? 1 : j === b.length ? -1 : compareIds(a[i]!, b[j]!);
    if (c <= 0) out.push(a[i++]!);
    if (c >= 0) out.push(b[j++]!);
    if (c === 0) out.pop();
  }
  return out;
}
