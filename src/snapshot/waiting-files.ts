import type Database from 'better-sqlite3';

/** The code of a file that stays in its folder because its watch's `after` (move, delete) failed: no sync waits, a person must fix the folder. */
export const DISPOSE_FAILED = 'DISPOSE_FAILED';

/** A file of a dataset's own feed kept while its sync waits for a person, or one that cannot be moved after its sync (DISPOSE_FAILED). */
export interface WaitingFile {
  file: string;
  feed: string;
  /** Why: the sync's code (HELD_OTHER_FEED, DRAFT_PENDING, DRAFT_MIXED, ...). */
  code: string;
  /** The sync's message: what it waits for and the command that ends the wait. */
  message: string | null;
  /** When it first waited (ms). */
  since: number;
}

/**
 * The files of a dataset's own feeds that the daemon keeps because their
 * sync ended waiting for a person (migration 18): the stop writes nothing
 * else, and `status` must say which file waits, since when and why. The
 * shared exports' kept files are export_files' (export-takers.ts).
 */
export class WaitingFiles {
  constructor(
    private readonly conn: Database.Database,
    private readonly dataset: string,
  ) {}

  /** `w.file` waits (again): a file that waited already keeps its first time. */
  wait(w: WaitingFile): void {
    this.conn
      .prepare(
        `INSERT INTO waiting_files (dataset, file, feed, code, message, since) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (dataset, file) DO UPDATE SET feed = excluded.feed, code = excluded.code, message = excluded.message`,
      )
      .run(this.dataset, w.file, w.feed, w.code, w.message, w.since);
  }

  /** The file waits no more (synced again, superseded, gone). */
  done(file: string): void {
    this.conn.prepare('DELETE FROM waiting_files WHERE dataset = ? AND file = ?').run(this.dataset, file);
  }

  /** Every file of the dataset that waits, oldest wait first. */
  all(): WaitingFile[] {
    return this.conn.prepare('SELECT file, feed, code, message, since FROM waiting_files WHERE dataset = ? ORDER BY since, file').all(this.dataset) as WaitingFile[];
  }
}
