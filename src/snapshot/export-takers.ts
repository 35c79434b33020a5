import type Database from 'better-sqlite3';

/** One dataset's feed taking a shared export (exports: + from:, issue 13). */
export interface Taker {
  dataset: string;
  feed: string;
}

/**
 * Which file of a shared export each taker is done with (migration 12): the
 * fan-out runs a file only for the takers whose last done file is not it.
 */
export class ExportTakers {
  constructor(private readonly conn: Database.Database) {}

  /** The sha256 of the last file of `exp` the taker is done with, or null. */
  doneWith(exp: string, t: Taker): string | null {
    const row = this.conn.prepare('SELECT sha256 FROM export_takers WHERE export = ? AND dataset = ? AND feed = ?').get(exp, t.dataset, t.feed) as { sha256: string } | undefined;
    return row?.sha256 ?? null;
  }

  /** The taker is done with the file `sha256` of `exp` (its sync ended `result`). */
  markDone(exp: string, t: Taker, sha256: string, result: string, at: number): void {
    this.conn
      .prepare(
        `INSERT INTO export_takers (export, dataset, feed, sha256, result, at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (export, dataset, feed) DO UPDATE SET sha256 = excluded.sha256, result = excluded.result, at = excluded.at`,
      )
      .run(exp, t.dataset, t.feed, sha256, result, at);
  }
}
