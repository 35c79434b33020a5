import type Database from 'better-sqlite3';

/** One dataset's feed taking a shared export (exports: + from:, issue 13). */
export interface Taker {
  dataset: string;
  feed: string;
}

/** A file of an export as its takers' progress names it: its path and modification time (a file rewritten in place is a new file). */
export interface ExportFileId {
  path: string;
  mtimeMs: number;
}

/** What became of one file for one taker: done, rejected and superseded let the taker go on; kept holds it back (migration 16). */
export type TakerFileOutcome = 'done' | 'rejected' | 'superseded' | 'kept';

export interface TakerFileMark {
  outcome: TakerFileOutcome;
  result: string;
  code: string | null;
  /** Why it was refused, when it was. */
  message?: string | null;
  at: number;
}

/** A file one taker keeps (status): the export's newer files wait for it, for this taker only. */
export interface KeptFile extends Taker {
  export: string;
  file: string;
  result: string;
  code: string | null;
  since: number;
  /** Newer files of the export other takers took, waiting in its folder for this one. */
  newer: number;
}

/**
 * Each taker's progress through a shared export (migrations 12 and 16): per
 * file and taker what became of it, so that each taker goes through the
 * export's files on its own and a restart resumes each where it was; and the
 * last content each taker is done with, so the same content again is not
 * sent twice.
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

  /** What became of `file` for the taker, or null when it has not taken it yet. */
  fileMark(exp: string, t: Taker, file: ExportFileId): TakerFileMark | null {
    const row = this.conn
      .prepare('SELECT outcome, result, code, message, at FROM export_files WHERE export = ? AND file = ? AND mtime_ms = ? AND dataset = ? AND feed = ?')
      .get(exp, file.path, file.mtimeMs, t.dataset, t.feed) as TakerFileMark | undefined;
    return row ?? null;
  }

  /** Note what became of `file` for the taker (a kept file's row is overwritten when the taker ends with it). */
  markFile(exp: string, t: Taker, file: ExportFileId, mark: TakerFileMark & { sha256?: string | null }): void {
    this.conn
      .prepare(
        `INSERT INTO export_files (export, file, mtime_ms, dataset, feed, sha256, outcome, result, code, message, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (export, file, mtime_ms, dataset, feed) DO UPDATE SET sha256 = coalesce(excluded.sha256, sha256), outcome = excluded.outcome,
           result = excluded.result, code = excluded.code, message = excluded.message, at = CASE WHEN outcome = 'kept' AND excluded.outcome = 'kept' THEN at ELSE excluded.at END`,
      )
      .run(exp, file.path, file.mtimeMs, t.dataset, t.feed, mark.sha256 ?? null, mark.outcome, mark.result, mark.code, mark.message ?? null, mark.at);
  }

  /** What became of `exp`'s files for each taker, one row per file and taker (the runtime's progress, read once then kept up to date). */
  marksOf(exp: string, file?: ExportFileId): Array<ExportFileId & Taker & { outcome: TakerFileOutcome }> {
    const all = 'SELECT file AS path, mtime_ms AS mtimeMs, dataset, feed, outcome FROM export_files WHERE export = ?';
    return (file ? this.conn.prepare(`${all} AND file = ? AND mtime_ms = ?`).all(exp, file.path, file.mtimeMs) : this.conn.prepare(all).all(exp)) as Array<ExportFileId & Taker & { outcome: TakerFileOutcome }>;
  }

  /** The file was archived (or is gone): its rows go. */
  forgetFile(exp: string, file: ExportFileId): void {
    this.conn.prepare('DELETE FROM export_files WHERE export = ? AND file = ? AND mtime_ms = ?').run(exp, file.path, file.mtimeMs);
  }

  /** The files of `exp` with rows (a crash between archiving a file and forgetting it leaves some: the caller forgets those not there). */
  files(exp: string): ExportFileId[] {
    return this.conn.prepare('SELECT DISTINCT file AS path, mtime_ms AS mtimeMs FROM export_files WHERE export = ?').all(exp) as ExportFileId[];
  }

  /** The files each taker of `dataset` keeps, oldest first. */
  kept(dataset: string): KeptFile[] {
    return this.conn
      .prepare(
        `SELECT export, file, dataset, feed, result, code, at AS since,
           (SELECT count(DISTINCT n.file || char(0) || n.mtime_ms) FROM export_files n WHERE n.export = k.export AND n.mtime_ms > k.mtime_ms) AS newer
         FROM export_files k WHERE dataset = ? AND outcome = 'kept' ORDER BY mtime_ms, file`,
      )
      .all(dataset) as KeptFile[];
  }
}
