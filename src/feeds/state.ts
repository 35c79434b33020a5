import type Database from 'better-sqlite3';
import { canonicalJson } from '../model/canonical.js';
import { HIDDEN, type FeedStateEntry, type FeedValue } from './resolve.js';

export type { FeedValue };

/** Record ids looked up at once (SQLite binds up to 32,766). */
const ID_BATCH = 500;

/** The last file a feed published. */
export interface FeedFile {
  feed: string;
  file: string | null;
  sha256: string | null;
  /** The file's time (ms). */
  at: number;
  publishedAt: number;
}

/** What a published plan of a feed records: its name and file. */
export interface FeedPublish {
  feed: string;
  file: string | null;
  sha256: string | null;
  /** The file's time (ms). */
  at: number;
}

/**
 * The feed state (issue 13) in the state database: each feed's last published
 * value per record and field, and its last file. Written only by the ledger's
 * published transition, inside its transaction (so a held, discarded or
 * refused change never lands here); read by a full feed's merge.
 */
export class FeedState {
  constructor(
    private readonly conn: Database.Database,
    private readonly dataset: string,
  ) {}

  /**
   * Record what a feed's published plan made its state (the merge's
   * FeedStateEntry list, merge-update.ts): its own values per record and field
   * (a value that lost to another feed's by precedence included), and, for a
   * feed that `hides` (missing: deactivate), the records it holds hidden, which
   * replace the ones it held. Call inside the transaction that confirms the snapshot.
   */
  published(p: FeedPublish, entries: Iterable<FeedStateEntry>, now: number, hides: boolean): void {
    const put = this.conn.prepare(
      `INSERT INTO feed_values (dataset, record_id, field, feed, value, file, sha256, line, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (dataset, record_id, field, feed) DO UPDATE SET value = excluded.value, file = excluded.file, sha256 = excluded.sha256, line = excluded.line, at = excluded.at`,
    );
    // Held hidden: exactly the records this file did not list (a record listed again comes back, resolve.ts).
    if (hides) this.conn.prepare('DELETE FROM feed_values WHERE dataset = ? AND feed = ? AND field = ?').run(this.dataset, p.feed, HIDDEN);
    for (const e of entries) {
      for (const [f, v] of Object.entries(e.values)) put.run(this.dataset, e.record_id, f, p.feed, canonicalJson(v ?? null), p.file, p.sha256, e.line, p.at);
      if (e.hidden && hides) put.run(this.dataset, e.record_id, HIDDEN, p.feed, 'true', p.file, p.sha256, e.line, p.at);
    }
    this.conn
      .prepare(
        `INSERT INTO feed_files (dataset, feed, file, sha256, at, published_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (dataset, feed) DO UPDATE SET file = excluded.file, sha256 = excluded.sha256, at = excluded.at, published_at = excluded.published_at`,
      )
      .run(this.dataset, p.feed, p.file, p.sha256, p.at, now);
  }

  /** The values of every feed of these fields (HIDDEN included), in record_id order; none asked: nothing read. */
  valuesOf(fields: readonly string[]): FeedValue[] {
    if (fields.length === 0) return [];
    return this.conn
      .prepare(`SELECT record_id, field, feed, value, at FROM feed_values WHERE dataset = ? AND field IN (${fields.map(() => '?').join(', ')}) ORDER BY record_id, field, feed`)
      .all(this.dataset, ...fields) as FeedValue[];
  }

  /** Every value of every feed, in record_id order (a plan of several files starts its StateOverlay from it). */
  all(): FeedValue[] {
    return this.conn.prepare('SELECT record_id, field, feed, value, at FROM feed_values WHERE dataset = ? ORDER BY record_id, field, feed').all(this.dataset) as FeedValue[];
  }

  /**
   * As valuesOf, of these records only (`ids` in record_id byte order, no repeats), looked up a batch at a time
   * through the primary key: a file that lists a small share of the dataset reads only their state (issue 13).
   */
  valuesOfIds(fields: readonly string[], ids: readonly string[]): FeedValue[] {
    if (fields.length === 0 || ids.length === 0) return [];
    const out: FeedValue[] = [];
    const marks = (n: number) => `${'?,'.repeat(n - 1)}?`;
    for (let i = 0; i < ids.length; i += ID_BATCH) {
      const batch = ids.slice(i, i + ID_BATCH);
      const rows = this.conn
        .prepare(`SELECT record_id, field, feed, value, at FROM feed_values WHERE dataset = ? AND record_id IN (${marks(batch.length)}) AND field IN (${marks(fields.length)}) ORDER BY record_id, field, feed`)
        .all(this.dataset, ...batch, ...fields) as FeedValue[];
      for (const r of rows) out.push(r);
    }
    return out;
  }

  /** Every value of the feeds other than `except`, in record_id order (read whole: a merge runs without yielding). */
  othersThan(except: string): FeedValue[] {
    return this.conn
      .prepare('SELECT record_id, field, feed, value, at FROM feed_values WHERE dataset = ? AND feed <> ? ORDER BY record_id, field, feed')
      .all(this.dataset, except) as FeedValue[];
  }

  /** The last file of each feed that published one. */
  files(): FeedFile[] {
    return this.conn
      .prepare('SELECT feed, file, sha256, at, published_at AS publishedAt FROM feed_files WHERE dataset = ? ORDER BY feed')
      .all(this.dataset) as FeedFile[];
  }
}
