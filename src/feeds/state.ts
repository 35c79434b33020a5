import type Database from 'better-sqlite3';
import type { DatasetRecord } from '../model/record.js';
import { canonicalJson } from '../model/canonical.js';
import { fieldValue, type FeedEntry } from './fields.js';

/** One feed's last published value of one field of one record. */
export interface FeedValue {
  record_id: string;
  field: string;
  feed: string;
  /** Canonical JSON. */
  value: string;
  /** The time of the file it came from (ms). */
  at: number;
}

/** The last file a feed published. */
export interface FeedFile {
  feed: string;
  file: string | null;
  sha256: string | null;
  /** The file's time (ms). */
  at: number;
  publishedAt: number;
}

/** What a published plan of a feed records: its name, file and the fields it owns. */
export interface FeedPublish {
  feed: string;
  fields: readonly string[];
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
   * Record the values a feed's file published: each entry read from the file
   * (line > 0) gives the feed's fields of its merged record. Call inside the
   * transaction that confirms the snapshot.
   */
  published(p: FeedPublish, entries: Iterable<FeedEntry>, now: number): void {
    const put = this.conn.prepare(
      `INSERT INTO feed_values (dataset, record_id, field, feed, value, file, sha256, line, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (dataset, record_id, field, feed) DO UPDATE SET value = excluded.value, file = excluded.file, sha256 = excluded.sha256, line = excluded.line, at = excluded.at`,
    );
    if (p.fields.length > 0) for (const e of entries) {
      if (e.line <= 0) continue;
      const rec = JSON.parse(e.json) as DatasetRecord;
      for (const f of p.fields) put.run(this.dataset, e.record_id, f, p.feed, canonicalJson(fieldValue(rec, f) ?? null), p.file, p.sha256, e.line, p.at);
    }
    this.conn
      .prepare(
        `INSERT INTO feed_files (dataset, feed, file, sha256, at, published_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (dataset, feed) DO UPDATE SET file = excluded.file, sha256 = excluded.sha256, at = excluded.at, published_at = excluded.published_at`,
      )
      .run(this.dataset, p.feed, p.file, p.sha256, p.at, now);
  }

  /** Every value of the feeds other than `except`, in record_id order (read whole: a merge runs without yielding). */
  othersThan(except: string): FeedValue[] {
    return this.conn
      .prepare('SELECT record_id, field, feed, value, at FROM feed_values WHERE dataset = ? AND feed <> ? ORDER BY record_id')
      .all(this.dataset, except) as FeedValue[];
  }

  /** The last file of each feed that published one. */
  files(): FeedFile[] {
    return this.conn
      .prepare('SELECT feed, file, sha256, at, published_at AS publishedAt FROM feed_files WHERE dataset = ? ORDER BY feed')
      .all(this.dataset) as FeedFile[];
  }
}
