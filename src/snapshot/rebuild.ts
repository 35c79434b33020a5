import type Database from 'better-sqlite3';
import type { DatasetRecord } from '../model/record.js';
import { changedFields, keptForeignFields, parseFields } from '../model/fields.js';
import { recordJson, textHash, type RecordText } from '../model/record-json.js';
import type { RebuildReport } from './types.js';
import { HistoryWriter, type Provenance } from './history-writer.js';
import type { Clock } from '../clock.js';
import { talliesKept, TallyDelta } from './tallies.js';

/** What the connector itself published, for a rebuild to recognise (SnapshotRebuild.commit). */
export interface OurRecords {
  /** Records as the connector wrote them, as canonical JSON (record-json.ts). */
  records: Iterable<RecordText>;
  /** record_ids adopted as owned without a write. */
  own?: Iterable<string>;
  /** Their plan, for the history row of this rebuild (issue 14); default: changes found on the server. */
  provenance?: Provenance;
}

/**
 * Rebuild of a dataset's snapshot from the server (first run, 412, a foreign
 * publish): records read page by page (GET /records, A7) go to a staging
 * table; commit() swaps them in with the version in one transaction, keeping
 * ownership and noting which owned records someone else edited (issue 7).
 * A crash before commit leaves the old snapshot untouched.
 */
export class SnapshotRebuild {
  private done = false;

  constructor(
    private readonly conn: Database.Database,
    private readonly dataset: string,
    private readonly clock: Clock,
    private readonly setConfirmed: (version: number, etag: string | null) => void,
  ) {
    conn.prepare('DELETE FROM rebuild_records WHERE dataset = ?').run(dataset);
  }

  /** Add one page of server records (one transaction). */
  add(records: Iterable<DatasetRecord>): void {
    this.assertOpen();
    const ins = this.conn.prepare(
      'INSERT OR REPLACE INTO rebuild_records (dataset, record_id, json, hash) VALUES (?, ?, ?, ?)',
    );
    this.conn.transaction(() => {
      for (const rec of records) {
        const json = recordJson(rec);
        ins.run(this.dataset, rec.record_id, json, textHash(json));
      }
    }).immediate();
  }

  /**
   * Replace the snapshot with what was read, at the server's active version.
   * `ours`: records the connector itself published (a held change a person
   * published in the portal): where the server holds exactly them they are
   * owned and not foreign edits (issue 7).
   */
  commit(activeVersion: number, etag: string | null = `"v${activeVersion}"`, ours?: OurRecords): RebuildReport {
    this.assertOpen();
    const ds = this.dataset;
    const report = this.conn.transaction((): RebuildReport => {
      const kept = talliesKept(this.conn, ds);
      const tally = new TallyDelta();
      const count = (sql: string): number => this.conn.prepare(sql).pluck().get(ds, ds) as number;
      const records = this.conn.prepare('SELECT count(*) FROM rebuild_records WHERE dataset = ?').pluck().get(ds) as number;
      const added = count(
        'SELECT count(*) FROM rebuild_records n WHERE n.dataset = ? AND NOT EXISTS (SELECT 1 FROM records o WHERE o.dataset = ? AND o.record_id = n.record_id)',
      );
      const removed = count(
        'SELECT count(*) FROM records o WHERE o.dataset = ? AND NOT EXISTS (SELECT 1 FROM rebuild_records n WHERE n.dataset = ? AND n.record_id = o.record_id)',
      );
      const ownedRemoved = count(
        'SELECT count(*) FROM records o WHERE o.dataset = ? AND o.owned = 1 AND NOT EXISTS (SELECT 1 FROM rebuild_records n WHERE n.dataset = ? AND n.record_id = o.record_id)',
      );
      const differing = this.conn
        .prepare(
          `SELECT n.record_id, n.json AS new_json, n.hash AS new_hash, o.json AS old_json, o.owned, o.foreign_fields
           FROM rebuild_records n JOIN records o ON o.dataset = n.dataset AND o.record_id = n.record_id
           WHERE n.dataset = ? AND n.hash <> o.hash`,
        )
        .all(ds) as Array<{ record_id: string; new_json: string; new_hash: string; old_json: string; owned: number; foreign_fields: string | null }>;

      // Ours, where the server holds exactly them: owned; a field kept as a server edit stays marked (as in confirm).
      const oldRow = this.conn.prepare('SELECT json, foreign_fields FROM records WHERE dataset = ? AND record_id = ?');
      const newHash = this.conn.prepare('SELECT hash FROM rebuild_records WHERE dataset = ? AND record_id = ?').pluck();
      // Streamed from the plan's changeset: only the ids and their marks are held.
      const ourMarks = new Map<string, string | null>();
      for (const o of ours?.records ?? []) {
        if (newHash.get(ds, o.record_id) !== textHash(o.json)) continue;
        const old = oldRow.get(ds, o.record_id) as { json: string; foreign_fields: string | null } | undefined;
        ourMarks.set(o.record_id, old?.foreign_fields ? keptForeignFields(old.json, old.foreign_fields, JSON.parse(o.json) as DatasetRecord) : null);
      }
      this.#history(activeVersion, ours?.provenance);
      if (kept) this.#tallySwap(tally, added, differing);
      this.conn
        .prepare(
          'DELETE FROM records WHERE dataset = ? AND record_id NOT IN (SELECT record_id FROM rebuild_records WHERE dataset = ?)',
        )
        .run(ds, ds);
      this.conn
        .prepare(
          `INSERT INTO records (dataset, record_id, json, hash, owned)
           SELECT dataset, record_id, json, hash, 0 FROM rebuild_records WHERE dataset = ?
           ON CONFLICT (dataset, record_id) DO UPDATE SET json = excluded.json, hash = excluded.hash`,
        )
        .run(ds);

      const foreignEdits: RebuildReport['foreignEdits'] = [];
      const mark = this.conn.prepare('UPDATE records SET foreign_fields = ?, foreign_at = ? WHERE dataset = ? AND record_id = ?');
      const own = this.conn.prepare('UPDATE records SET owned = 1, foreign_fields = ?, foreign_at = CASE WHEN ? IS NULL THEN NULL ELSE foreign_at END WHERE dataset = ? AND record_id = ?');
      const adopt = this.conn.prepare('UPDATE records SET owned = 1 WHERE dataset = ? AND record_id = ?');
      const notOwned = this.conn.prepare('SELECT json FROM records WHERE dataset = ? AND record_id = ? AND owned = 0').pluck();
      const owning = (id: string): void => {
        const json = notOwned.get(ds, id) as string | undefined;
        if (json !== undefined) tally.own(json);
      };
      for (const [id, marks] of ourMarks) {
        owning(id);
        own.run(marks, marks, ds, id);
      }
      for (const id of ours?.own ?? []) {
        owning(id);
        adopt.run(ds, id);
      }
      for (const d of differing) {
        if (d.owned !== 1) continue;
        if (ourMarks.has(d.record_id)) continue; // our own change, published by a person
        const fields = changedFields(JSON.parse(d.old_json) as DatasetRecord, JSON.parse(d.new_json) as DatasetRecord);
        foreignEdits.push({ record_id: d.record_id, fields });
        const all = [...new Set([...parseFields(d.foreign_fields), ...fields])];
        mark.run(all.length ? JSON.stringify(all) : null, this.clock.now(), ds, d.record_id);
      }
      this.conn.prepare('DELETE FROM rebuild_records WHERE dataset = ?').run(ds);
      tally.apply(this.conn, ds, kept);
      this.setConfirmed(activeVersion, etag);
      return { records, added, removed, changed: differing.length, foreignEdits, ownedRemoved };
    }).immediate();
    this.done = true;
    return report;
  }

  /** Issue 14: what the swap changes goes to the history, in its transaction (a record read as it was is not a change). */
  #history(activeVersion: number, provenance: Provenance | undefined): void {
    const ds = this.dataset;
    const base = this.conn.prepare('SELECT active_version FROM datasets WHERE dataset = ?').pluck().get(ds) as number | null | undefined;
    const history = new HistoryWriter(this.conn, ds, this.clock, provenance ?? { kind: 'server' }, activeVersion, base ?? null);
    // A page at a time (a first run may read a million records): no statement stays open while the history is written.
    const changed = this.conn.prepare(
      `SELECT n.record_id AS id, o.json AS old, n.json AS new FROM rebuild_records n
         LEFT JOIN records o ON o.dataset = n.dataset AND o.record_id = n.record_id
       WHERE n.dataset = ? AND n.record_id > ? AND (o.hash IS NULL OR o.hash <> n.hash) ORDER BY n.record_id LIMIT 1000`,
    );
    const gone = this.conn.prepare(
      `SELECT o.record_id AS id, o.json AS old, NULL AS new FROM records o
       WHERE o.dataset = ? AND o.record_id > ?
         AND NOT EXISTS (SELECT 1 FROM rebuild_records n WHERE n.dataset = o.dataset AND n.record_id = o.record_id)
       ORDER BY o.record_id LIMIT 1000`,
    );
    for (const q of [changed, gone]) {
      for (let after = ''; ; ) {
        const page = q.all(ds, after) as Array<{ id: string; old: string | null; new: string | null }>;
        for (const m of page) history.record(m.id, m.old, m.new);
        if (page.length < 1000) break;
        after = page.at(-1)!.id;
      }
    }
  }

  /**
   * What the swap does to the tallies (tallies.ts), read before it: records removed, `added` records (not owned),
   * owned records whose text changes (`differing`: the rows whose hash differs).
   */
  #tallySwap(tally: TallyDelta, added: number, differing: ReadonlyArray<{ old_json: string; new_json: string; owned: number }>): void {
    const ds = this.dataset;
    const gone = this.conn.prepare(
      `SELECT o.record_id AS id, o.owned, o.json FROM records o
       WHERE o.dataset = ? AND o.record_id > ?
         AND NOT EXISTS (SELECT 1 FROM rebuild_records n WHERE n.dataset = o.dataset AND n.record_id = o.record_id)
       ORDER BY o.record_id LIMIT 1000`,
    );
    for (let after = ''; ; ) {
      const page = gone.all(ds, after) as Array<{ id: string; owned: number; json: string }>;
      for (const r of page) tally.removed(r.json, r.owned === 1);
      if (page.length < 1000) break;
      after = page.at(-1)!.id;
    }
    tally.records += added;
    for (const d of differing) if (d.owned === 1) tally.changed(d.old_json, d.new_json);
  }

  /** Drop what was read; the snapshot stays as it was. */
  abort(): void {
    if (this.done) return;
    this.conn.prepare('DELETE FROM rebuild_records WHERE dataset = ?').run(this.dataset);
    this.done = true;
  }

  private assertOpen(): void {
    if (this.done) throw new TypeError('rebuild already committed or aborted');
  }
}
