import type Database from 'better-sqlite3';
import { deflateRawSync } from 'node:zlib';
import type { DatasetRecord } from '../model/record.js';
import { addEntry, changeEntry, deleteEntry } from './history-codec.js';
import type { Clock } from '../clock.js';

/** Where a change to the snapshot came from, for `why` (issue 14). */
export interface Provenance {
  /** sync: an export published; restore: a restore published; server: a rebuild found the server's records changed. */
  kind: 'sync' | 'restore' | 'server';
  /** The plan (run id) that published it. */
  planId?: string | null;
  /** The export: its path and content hash. */
  file?: string | null;
  fileHash?: string | null;
  /** JSON: counts, the delete guard's ratio, whether a person approved it. */
  detail?: unknown;
}

/** Entries a chunk takes before it is deflated and a new one begins. */
export const CHUNK_ENTRIES = 16;

/**
 * Writes one change's history rows, inside the transaction that moves the
 * snapshot (store.ts confirm, rebuild.ts commit): the version row on the
 * first record that really changed, then one entry per record appended to its
 * newest chunk (a full chunk is deflated).
 */
export class HistoryWriter {
  #seq: number | null = null;
  readonly #last;
  readonly #append;
  readonly #insert;
  readonly #read;
  readonly #pack;

  constructor(
    private readonly conn: Database.Database,
    private readonly dataset: string,
    private readonly clock: Clock,
    private readonly prov: Provenance,
    /** The server's active version after the change. */
    private readonly version: number | null,
    /** The active version before it (the base row when history begins). */
    private readonly baseVersion: number | null,
  ) {
    this.#last = conn.prepare(
      `SELECT first_seq, entries, typeof(data) AS t FROM history_records WHERE dataset = ? AND record_id = ? ORDER BY first_seq DESC LIMIT 1`,
    );
    this.#append = conn.prepare(
      `UPDATE history_records SET data = data || char(10) || ?, entries = entries + 1, last_seq = ? WHERE dataset = ? AND record_id = ? AND first_seq = ?`,
    );
    this.#insert = conn.prepare(
      `INSERT INTO history_records (dataset, record_id, first_seq, last_seq, entries, data) VALUES (?, ?, ?, ?, 1, ?)`,
    );
    this.#read = conn.prepare('SELECT data FROM history_records WHERE dataset = ? AND record_id = ? AND first_seq = ?').pluck();
    this.#pack = conn.prepare('UPDATE history_records SET data = ? WHERE dataset = ? AND record_id = ? AND first_seq = ?');
  }

  /**
   * A record went from `oldJson` to `newJson` (null: absent), both canonical record JSON; nothing when equal.
   * `first`: the caller knows the record has no history rows (its dataset had none when the change began, and the
   * change has not written this record before): its chunk is made without looking for one.
   */
  record(recordId: string, oldJson: string | null, newJson: string | null, line: number | null = null, first = false): void {
    if (oldJson === newJson) return;
    let text: string | null;
    const seq = this.#seqNow();
    if (oldJson === null) text = addEntry(seq, line);
    else if (newJson === null) text = deleteEntry(seq, line, oldJson);
    else text = changeEntry(seq, line, JSON.parse(oldJson) as DatasetRecord, JSON.parse(newJson) as DatasetRecord);
    if (text === null) return;
    const last = first ? undefined : (this.#last.get(this.dataset, recordId) as { first_seq: number; entries: number; t: string } | undefined);
    if (last && last.t === 'text' && last.entries < CHUNK_ENTRIES) {
      this.#append.run(text, seq, this.dataset, recordId, last.first_seq);
      if (last.entries + 1 === CHUNK_ENTRIES) {
        const full = this.#read.get(this.dataset, recordId, last.first_seq) as string;
        this.#pack.run(deflateRawSync(Buffer.from(full, 'utf8')), this.dataset, recordId, last.first_seq);
      }
    } else {
      this.#insert.run(this.dataset, recordId, seq, seq, text);
    }
  }

  /** The seq of this change, its version row written on first use (and the base row when history begins). */
  #seqNow(): number {
    if (this.#seq !== null) return this.#seq;
    const max = this.conn.prepare('SELECT max(seq) FROM history_versions WHERE dataset = ?').pluck().get(this.dataset) as number | null;
    const at = this.clock.now();
    const ins = this.conn.prepare(
      'INSERT INTO history_versions (dataset, seq, version, at, kind, plan_id, file, file_hash, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    );
    if (max === null) ins.run(this.dataset, 0, this.baseVersion, at, 'base', null, null, null, null);
    this.#seq = (max ?? 0) + 1;
    const p = this.prov;
    ins.run(this.dataset, this.#seq, this.version, at, p.kind, p.planId ?? null, p.file ?? null, p.fileHash ?? null, p.detail === undefined ? null : JSON.stringify(p.detail));
    return this.#seq;
  }
}
