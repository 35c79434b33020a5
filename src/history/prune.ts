import type Database from 'better-sqlite3';
import type { HistoryConfig } from '../config/history.js';

const DAY_MS = 86_400_000;

/** What a prune removed, and the oldest point kept. */
export interface PruneReport {
  fromSeq: number;
  versions: number;
  chunks: number;
  bytes: number;
}

/**
 * Drop the history older than the retention (days, versions), then more of
 * the oldest while it is larger than max_bytes, in one transaction. The
 * state at every seq from `fromSeq` on stays whole: a chunk goes only when
 * every entry in it is at or before that seq (an entry undoes its own change,
 * so none after `fromSeq` is needed to reach it), and the version row of
 * `fromSeq` itself stays to name the oldest version kept.
 */
export function pruneHistory(conn: Database.Database, dataset: string, cfg: HistoryConfig, now: number): PruneReport | null {
  return conn.transaction((): PruneReport | null => {
    const newest = conn.prepare('SELECT max(seq) FROM history_versions WHERE dataset = ?').pluck().get(dataset) as number | null;
    if (newest === null) return null;
    const current = (conn.prepare('SELECT history_from_seq FROM datasets WHERE dataset = ?').pluck().get(dataset) as number | null | undefined) ?? 0;
    let from = current;
    if (cfg.retention_days > 0) {
      // The state when the window begins is the last change before it: kept, so restore reaches the window's start.
      const before = conn
        .prepare('SELECT max(seq) FROM history_versions WHERE dataset = ? AND at <= ?')
        .pluck()
        .get(dataset, now - cfg.retention_days * DAY_MS) as number | null;
      if (before !== null) from = Math.max(from, before);
    }
    if (cfg.retention_versions > 0) from = Math.max(from, newest - cfg.retention_versions);
    const size = () => (conn.prepare('SELECT coalesce(sum(length(data)), 0) FROM history_records WHERE dataset = ? AND last_seq > ?').pluck().get(dataset, from) as number);
    let bytes = size();
    while (bytes > cfg.max_bytes && from < newest) {
      from = Math.min(newest, from + Math.max(1, Math.ceil((newest - from) / 10)));
      bytes = size();
    }
    if (from <= current) return null;
    const versions = conn.prepare('DELETE FROM history_versions WHERE dataset = ? AND seq < ?').run(dataset, from).changes;
    const chunks = conn.prepare('DELETE FROM history_records WHERE dataset = ? AND last_seq <= ?').run(dataset, from).changes;
    conn.prepare('UPDATE datasets SET history_from_seq = ? WHERE dataset = ?').run(from, dataset);
    return { fromSeq: from, versions, chunks, bytes };
  }).immediate();
}
