import { randomBytes } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { DatasetRecord, RecordField } from '../model/record.js';
import { keptForeignFields, parseFields } from '../model/fields.js';
import { recordJson, textHash } from '../model/record-json.js';
import { DatasetState } from './dataset-state.js';
import type { SnapshotEntry, SnapshotReader } from '../model/snapshot-reader.js';
import { SnapshotRebuild } from './rebuild.js';
import type { ConfirmedChange, ServerIdentity, SnapshotInfo, StoredRecord } from './types.js';
import { HistoryWriter } from './history-writer.js';
import { GenerationTriggers } from './generation-triggers.js';
import type { Clock } from '../clock.js';
import { readTallies, talliesKept, TallyDelta, type SnapshotTallies } from './tallies.js';

/** Rows per page of the streaming reader: bounded memory, and no statement left open across awaits. */
const PAGE_SIZE = 1000;
const NO_FIELDS: readonly RecordField[] = Object.freeze([]);
/** Ids looked up at once by entriesOf (SQLite binds up to 32,766). */
const ID_BATCH = 500;

/**
 * One text a row (owned, foreign fields, JSON, id; tab-separated, the id last as it is the only part that
 * could hold a tab): a string a row costs the JS side about half of an array of four values.
 */
const ENTRY_ROW = `owned || char(9) || coalesce(foreign_fields, '') || char(9) || json || char(9) || record_id`;

function entryOfRow(row: string): SnapshotEntry {
  const a = row.indexOf('\t');
  const b = row.indexOf('\t', a + 1);
  const c = row.indexOf('\t', b + 1);
  const foreign = b > a + 1 ? parseFields(row.slice(a + 1, b)) : NO_FIELDS;
  return { record_id: row.slice(c + 1), json: row.slice(b + 1, c), owned: row.charCodeAt(0) === 0x31, foreignFields: foreign };
}

/** The records' generation, the state database's identity and the mark of the last stamp (recordsMark). */
export interface RecordsMark {
  db: string;
  generation: number;
  mark: string | null;
}

interface Row {
  record_id: string;
  json: string;
  hash: string;
  owned: number;
  foreign_fields: string | null;
}

/**
 * One dataset's snapshot: the published records as last confirmed by the
 * server, plus the dataset's state. The records move only through confirm()
 * and a rebuild's commit(), each one transaction (house style 7).
 */
export class SnapshotStore extends DatasetState {
  constructor(conn: Database.Database, dataset: string, clock: Clock) {
    super(conn, dataset, clock);
  }

  /**
   * Everything known about the dataset, with record counts (for `status`): kept since migration 15
   * (tallies.ts); a dataset without them is counted, reading every record (a second or more at 1,000,000).
   */
  info(): SnapshotInfo {
    const c = this.counts();
    return { ...this.state(), recordCount: c.total, ownedCount: c.owned, notOwnedCount: c.total - c.owned };
  }

  /**
   * The records' generation (migration 17): bumped by the database itself on every write of this dataset's
   * records, so an equal generation means the records are as they were when it was read (0: never written).
   */
  generation(): number {
    const row = this.conn.prepare('SELECT generation FROM record_generations WHERE dataset = ?').get(this.dataset) as { generation: number } | undefined;
    return row?.generation ?? 0;
  }

  /**
   * What names these records beyond their generation (migration 19): the state database's own random identity and
   * the mark a stamp of kept rows last set (null: none since the generation row was made). Kept rows are taken only
   * when all three are the stamp's: another database (made again, copied) has another identity, and a backup of
   * this one restored may reach the stamped generation again with other records, but never holds the mark.
   */
  recordsMark(): RecordsMark {
    const row = this.conn.prepare('SELECT generation, stamp_mark FROM record_generations WHERE dataset = ?').get(this.dataset) as { generation: number; stamp_mark: string | null } | undefined;
    return { db: this.#identity(), generation: row?.generation ?? 0, mark: row?.stamp_mark ?? null };
  }

  /**
   * The mark a stamp of kept rows names for the records at `generation` (a random value, prefixed with the generation
   * it was set at), set in one transaction with the check that they are still at it. Null when written since.
   */
  markRecords(generation: number): RecordsMark | null {
    return this.conn.transaction(() => {
      const now = this.recordsMark();
      if (now.generation !== generation) return null;
      // A mark set at this very generation still names these records (no write since, or the generation would be
      // another): kept, so that a stamp made again of unchanged records matches the database's mark.
      if (now.mark?.startsWith(`${generation}.`)) return now;
      const mark = `${generation}.${randomBytes(16).toString('hex')}`;
      // Generation 0 (no record ever written) has no row yet: the triggers count on from it.
      this.conn
        .prepare('INSERT INTO record_generations (dataset, generation, stamp_mark) VALUES (?, ?, ?) ON CONFLICT (dataset) DO UPDATE SET stamp_mark = excluded.stamp_mark')
        .run(this.dataset, generation, mark);
      return { ...now, mark };
    }).immediate();
  }

  #identity(): string {
    return this.conn.prepare('SELECT id FROM state_identity').pluck().get() as string;
  }

  /** Whether a record is marked as edited by someone else (issue 7): its published value may not be its row's. */
  hasForeignEdits(): boolean {
    return this.conn.prepare('SELECT 1 FROM records INDEXED BY records_foreign WHERE dataset = ? AND foreign_fields IS NOT NULL LIMIT 1').get(this.dataset) !== undefined;
  }

  /** The records of the dataset and how many of them are owned: kept (tallies()), else counted (reads every record). */
  counts(): { total: number; owned: number } {
    const t = readTallies(this.conn, this.dataset);
    if (t) return { total: t.records, owned: t.owned };
    return this.conn.prepare('SELECT count(*) AS total, coalesce(sum(owned), 0) AS owned FROM records WHERE dataset = ?').get(this.dataset) as { total: number; owned: number };
  }

  /**
   * Stream the records in record_id byte order, a page at a time (no
   * statement is left open across the awaits of a diff). Each entry carries
   * its JSON: reading it costs no more than its hash (SQLite reads the row
   * either way), and comparing text saves hashing the source.
   */
  reader(): SnapshotReader {
    const page = this.conn.prepare(`SELECT ${ENTRY_ROW} FROM records WHERE dataset = ? AND record_id > ? ORDER BY record_id LIMIT ${PAGE_SIZE}`).pluck();
    const dataset = this.dataset;
    return {
      *entries(): Generator<SnapshotEntry> {
        let after = '';
        for (;;) {
          const rows = page.all(dataset, after) as string[];
          let id = after;
          for (const row of rows) {
            const e = entryOfRow(row);
            id = e.record_id;
            yield e;
          }
          if (rows.length < PAGE_SIZE) return;
          after = id;
        }
      },
    };
  }

  /**
   * The records of these ids that exist, in record_id byte order: `ids` must be
   * in that order (compareIds) without repeats. Looked up through the primary
   * key a batch at a time (a feed file that lists a small share of the dataset
   * reads only those, issue 13), never the whole snapshot.
   */
  *entriesOf(ids: readonly string[]): Generator<SnapshotEntry> {
    const full = this.#byIds(ID_BATCH);
    for (let i = 0; i < ids.length; i += ID_BATCH) {
      const batch = ids.slice(i, i + ID_BATCH);
      const rows = (batch.length === ID_BATCH ? full : this.#byIds(batch.length)).all(this.dataset, ...batch) as string[];
      for (const row of rows) yield entryOfRow(row);
    }
  }

  #byIds(n: number): Database.Statement {
    return this.conn.prepare(`SELECT ${ENTRY_ROW} FROM records WHERE dataset = ? AND record_id IN (${'?,'.repeat(n - 1)}?) ORDER BY record_id`).pluck();
  }

  /** The ids of the records the connector does not own, in record_id byte order. */
  notOwnedIds(): string[] {
    return this.conn.prepare('SELECT record_id FROM records WHERE dataset = ? AND owned = 0 ORDER BY record_id').pluck().all(this.dataset) as string[];
  }

  /**
   * The owned records' values of one field (`path`: an SQLite JSON path, for example $.attributes."stock"), each
   * distinct value (canonical JSON; null: the record has no such field) with how many records hold it. `among`:
   * only these ids (record_id order not needed). For the value guards' bases without parsing every record in JS.
   */
  ownedValueCounts(path: string, among?: readonly string[]): Array<{ value: string | null; n: number }> {
    const sql = (n: number | null) =>
      `SELECT json -> ? AS value, count(*) AS n FROM records WHERE dataset = ? AND owned = 1${n === null ? '' : ` AND record_id IN (${'?,'.repeat(n - 1)}?)`} GROUP BY value`;
    if (among === undefined) return this.conn.prepare(sql(null)).all(path, this.dataset) as Array<{ value: string | null; n: number }>;
    const out: Array<{ value: string | null; n: number }> = [];
    for (let i = 0; i < among.length; i += ID_BATCH) {
      const batch = among.slice(i, i + ID_BATCH);
      out.push(...(this.conn.prepare(sql(batch.length)).all(path, this.dataset, ...batch) as Array<{ value: string | null; n: number }>));
    }
    return out;
  }

  /** The record counts and the owned records' value-guard bases as kept (tallies.ts); null when they are not. */
  tallies(): SnapshotTallies | null {
    return readTallies(this.conn, this.dataset);
  }

  /** One stored record, or null. */
  get(recordId: string): StoredRecord | null {
    const r = this.conn
      .prepare('SELECT record_id, json, hash, owned, foreign_fields FROM records WHERE dataset = ? AND record_id = ?')
      .get(this.dataset, recordId) as Row | undefined;
    if (!r) return null;
    return { record: JSON.parse(r.json) as DatasetRecord, hash: r.hash, owned: r.owned === 1, foreignFields: parseFields(r.foreign_fields) };
  }

  /**
   * Apply what the server confirmed, in one transaction: upserts (owned),
   * deletes, adoptions and the new active version (and the source, if given).
   * A foreign-edited field stays marked only while its value is kept (issue 7).
   * Every record that really changes gets its history entry in the same
   * transaction (issue 14, src/history/), whoever confirms.
   */
  confirm(change: ConfirmedChange): void {
    const foreign = new Map(
      (
        this.conn
          // INDEXED BY: without statistics SQLite prefers the primary key (dataset = ?) and reads the whole snapshot on
          // every confirm (64 ms at 100,000 records; the history bench's 8,640 confirms spent most of their time here).
          .prepare('SELECT record_id, json, foreign_fields FROM records INDEXED BY records_foreign WHERE dataset = ? AND foreign_fields IS NOT NULL')
          .all(this.dataset) as Array<{ record_id: string; json: string; foreign_fields: string }>
      ).map((r) => [r.record_id, r] as const),
    );
    const upsert = this.conn.prepare(
      `INSERT INTO records (dataset, record_id, json, hash, owned, foreign_fields, foreign_at)
       VALUES (?, ?, ?, ?, 1, ?, NULL)
       ON CONFLICT (dataset, record_id) DO UPDATE SET json = excluded.json, hash = excluded.hash, owned = 1,
         foreign_fields = excluded.foreign_fields,
         foreign_at = CASE WHEN excluded.foreign_fields IS NULL THEN NULL ELSE records.foreign_at END`,
    );
    const insert = this.conn.prepare(
      `INSERT INTO records (dataset, record_id, json, hash, owned) VALUES (?, ?, ?, ?, 1) ON CONFLICT (dataset, record_id) DO NOTHING`,
    );
    const del = this.conn.prepare('DELETE FROM records WHERE dataset = ? AND record_id = ? RETURNING owned, json');
    const current = this.conn.prepare('SELECT owned, json FROM records WHERE dataset = ? AND record_id = ?');
    const tally = new TallyDelta();
    const triggers = new GenerationTriggers(this.conn);
    let history: HistoryWriter;
    // A dataset without records when the confirm began (a first sync): a record is new unless this confirm wrote it
    // already, which the insert finds (it writes nothing), so it is not looked up first; without any history either,
    // its history entry is its first (firstEntries).
    let empty = false;
    let firstEntries = false;
    // The tallies counted ahead (change.tallyAhead), taken only if every write of this confirm is an insert it counted.
    let ahead: TallyDelta | null = null;
    let inserted = 0;
    let onlyInserts = true;
    const put = (id: string, json: string, rec: () => DatasetRecord, line?: number): void => {
      if (empty && insert.run(this.dataset, id, json, textHash(json)).changes === 1) {
        triggers.wrote(1);
        if (ahead) inserted++;
        else tally.added(json, true);
        history.record(id, null, json, line ?? null, firstEntries);
        return;
      }
      onlyInserts = false;
      const old = foreign.get(id);
      const row = current.get(this.dataset, id) as { owned: number; json: string } | undefined;
      triggers.wrote(upsert.run(this.dataset, id, json, textHash(json), old ? keptForeignFields(old.json, old.foreign_fields, rec()) : null).changes);
      if (!row) tally.added(json, true);
      else if (row.owned !== 1) tally.own(json);
      else if (row.json !== json) tally.changed(row.json, json);
      history.record(id, row?.json ?? null, json, line ?? null);
    };
    this.conn.transaction(() => {
      empty = !this.#hasRecords();
      firstEntries = empty && this.conn.prepare('SELECT 1 FROM history_records WHERE dataset = ? LIMIT 1').get(this.dataset) === undefined;
      const kept = talliesKept(this.conn, this.dataset);
      ahead = empty ? (change.tallyAhead ?? null) : null;
      history = new HistoryWriter(this.conn, this.dataset, this.clock, change.provenance ?? { kind: 'sync' }, change.activeVersion, this.confirmedVersion());
      for (const rec of change.upserts ?? []) put(rec.record_id, recordJson(rec), () => rec);
      // Already canonical JSON (a plan's changeset on disk): parsed only where a foreign edit needs the record.
      for (const t of change.upsertTexts ?? []) put(t.record_id, t.json, () => JSON.parse(t.json) as DatasetRecord, t.line);
      for (const id of change.deletes ?? []) {
        const before = del.get(this.dataset, id) as { owned: number; json: string } | undefined;
        if (before === undefined) continue;
        onlyInserts = false;
        triggers.wrote(1);
        tally.removed(before.json, before.owned === 1);
        history.record(id, before.json, null);
      }
      if (this.#own(change.own ?? [], tally, triggers) > 0) onlyInserts = false;
      triggers.restore();
      if (!ahead) tally.apply(this.conn, this.dataset, kept);
      // Counted ahead as exactly these inserts into a dataset without records: the tallies are that delta; else the
      // records (all of them written by this confirm) are counted again.
      else if (onlyInserts && inserted === ahead.records && ahead.owned === ahead.records) ahead.apply(this.conn, this.dataset, kept);
      else new TallyDelta().apply(this.conn, this.dataset, false);
      this.setConfirmed(change.activeVersion, change.etag ?? `"v${change.activeVersion}"`);
      if (change.source) this.recordSource(change.source);
    }).immediate();
  }

  /** Start reading the server's records into a staging area; commit() swaps them in (and names `server` as the dataset they mirror). */
  beginRebuild(server?: ServerIdentity): SnapshotRebuild {
    return new SnapshotRebuild(this.conn, this.dataset, this.clock, (v, etag) => {
      this.setConfirmed(v, etag, true);
      if (server) this.setServer(server);
    });
  }

  /** Mark records as owned (adoption) without changing their content. */
  adopt(recordIds: Iterable<string>): void {
    this.conn.transaction(() => {
      const kept = talliesKept(this.conn, this.dataset);
      const tally = new TallyDelta();
      const triggers = new GenerationTriggers(this.conn);
      this.#own(recordIds, tally, triggers);
      triggers.restore();
      tally.apply(this.conn, this.dataset, kept);
    }).immediate();
  }

  /** Records not owned become owned, counted in `tally` (an owned one, or an id not in the snapshot, is left as it is); how many. */
  #own(recordIds: Iterable<string>, tally: TallyDelta, triggers: GenerationTriggers): number {
    const own = this.conn.prepare('UPDATE records SET owned = 1 WHERE dataset = ? AND record_id = ? AND owned = 0 RETURNING json').pluck();
    let n = 0;
    for (const id of recordIds) {
      const json = own.get(this.dataset, id) as string | undefined;
      if (json === undefined) continue;
      n++;
      triggers.wrote(1);
      tally.own(json);
    }
    return n;
  }

  #hasRecords(): boolean {
    return this.conn.prepare('SELECT 1 FROM records WHERE dataset = ? LIMIT 1').get(this.dataset) !== undefined;
  }
}
