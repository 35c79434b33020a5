import type Database from 'better-sqlite3';
import { inflateRawSync } from 'node:zlib';
import { ConnectorError } from '../errors.js';
import type { DatasetRecord } from '../model/record.js';
import { recordJson, type RecordText } from '../model/record-json.js';
import { compareIds } from '../model/snapshot-reader.js';
import { decodeEntries, undo, type HistoryEntry } from '../snapshot/history-codec.js';

/** One version row of the history: what moved the snapshot, when, from which export. */
export interface HistoryVersion {
  seq: number;
  version: number | null;
  at: number;
  kind: 'base' | 'sync' | 'restore' | 'server';
  planId: string | null;
  file: string | null;
  fileHash: string | null;
  detail: Record<string, unknown> | null;
}

/** A point to restore to. */
export type HistoryPoint = { version: number } | { time: number };

interface VersionRow {
  seq: number;
  version: number | null;
  at: number;
  kind: HistoryVersion['kind'];
  plan_id: string | null;
  file: string | null;
  file_hash: string | null;
  detail: string | null;
}

/** Reads one dataset's history (offline: the state database only). */
export class HistoryReader {
  constructor(
    private readonly conn: Database.Database,
    readonly dataset: string,
  ) {}

  /** The version row of a seq, or null when pruned or never written. */
  version(seq: number): HistoryVersion | null {
    const r = this.conn.prepare('SELECT * FROM history_versions WHERE dataset = ? AND seq = ?').get(this.dataset, seq) as VersionRow | undefined;
    return r ? toVersion(r) : null;
  }

  /** The oldest kept version row (the earliest state history can give), or null before any history. */
  oldest(): HistoryVersion | null {
    const r = this.conn
      .prepare('SELECT * FROM history_versions WHERE dataset = ? AND seq >= ? ORDER BY seq LIMIT 1')
      .get(this.dataset, this.fromSeq()) as VersionRow | undefined;
    return r ? toVersion(r) : null;
  }

  /** The newest version row. */
  newest(): HistoryVersion | null {
    const r = this.conn.prepare('SELECT * FROM history_versions WHERE dataset = ? ORDER BY seq DESC LIMIT 1').get(this.dataset) as VersionRow | undefined;
    return r ? toVersion(r) : null;
  }

  /** The oldest seq history still gives (pruning moves it). */
  fromSeq(): number {
    const v = this.conn.prepare('SELECT history_from_seq FROM datasets WHERE dataset = ?').pluck().get(this.dataset) as number | null | undefined;
    return v ?? 0;
  }

  /** A record's entries, oldest first (those before the kept history left out). */
  entries(recordId: string): HistoryEntry[] {
    const rows = this.conn
      .prepare('SELECT data FROM history_records WHERE dataset = ? AND record_id = ? ORDER BY first_seq')
      .pluck()
      .all(this.dataset, recordId) as Array<string | Buffer>;
    const from = this.fromSeq();
    return rows.flatMap((d) => decodeEntries(chunkText(d))).filter((e) => e.seq > from);
  }

  /**
   * The seq whose state a point names: the last change at or before the
   * version or time. A point older than the kept history is an error naming
   * the oldest version kept.
   */
  seqOf(point: HistoryPoint): HistoryVersion {
    const oldest = this.oldest();
    if (!oldest) {
      throw new ConnectorError('HISTORY_EMPTY', `Dataset ${this.dataset} has no history yet: nothing was published since it began to be kept.`, {
        action: 'reject',
        context: { dataset: this.dataset },
      });
    }
    const newest = this.newest()!;
    if ('version' in point && newest.version !== null && point.version > newest.version) {
      // Not the newest in disguise: a version that is not there yet is a typo or the wrong dataset (usage, exit 2).
      throw new ConnectorError(
        'VERSION_TOO_NEW',
        `Dataset ${this.dataset}: version ${point.version} is newer than the newest version kept, version ${newest.version} of ${new Date(newest.at).toISOString()}; the history keeps ${keptWords(oldest)} to version ${newest.version}.`,
        { action: 'reject', context: { dataset: this.dataset, newestVersion: newest.version, oldestVersion: oldest.version } },
      );
    }
    const r = (
      'version' in point
        ? this.conn.prepare('SELECT * FROM history_versions WHERE dataset = ? AND version <= ? AND seq >= ? ORDER BY seq DESC LIMIT 1').get(this.dataset, point.version, oldest.seq)
        : this.conn.prepare('SELECT * FROM history_versions WHERE dataset = ? AND at <= ? AND seq >= ? ORDER BY seq DESC LIMIT 1').get(this.dataset, point.time, oldest.seq)
    ) as VersionRow | undefined;
    const tooOld = !r || ('version' in point && oldest.version !== null && point.version < oldest.version);
    if (tooOld) {
      const what = 'version' in point ? `version ${point.version}` : new Date(point.time).toISOString();
      const kept = `${keptWords(oldest)} of ${new Date(oldest.at).toISOString()}`;
      throw new ConnectorError('HISTORY_TOO_OLD', `Dataset ${this.dataset}: ${what} is older than the history kept; the oldest version kept is ${kept}.`, {
        action: 'reject',
        context: { dataset: this.dataset, oldestVersion: oldest.version, oldestAt: oldest.at },
      });
    }
    return toVersion(r);
  }

  /**
   * The published records as they were after `seq`, in record_id order: the
   * snapshot with every later entry undone, newest first. Streams the
   * snapshot; holds only the records changed since.
   */
  *stateAt(seq: number): Generator<RecordText & { owned: boolean }> {
    const changed = new Map<string, string | null>();
    const chunks = this.conn
      .prepare(
        `SELECT record_id, data FROM history_records WHERE dataset = ? AND record_id IN
           (SELECT record_id FROM history_records WHERE dataset = ? AND last_seq > ?) ORDER BY record_id, first_seq`,
      )
      .all(this.dataset, this.dataset, seq) as Array<{ record_id: string; data: string | Buffer }>;
    const current = this.conn.prepare('SELECT json FROM records WHERE dataset = ? AND record_id = ?').pluck();
    for (let i = 0; i < chunks.length; ) {
      const id = chunks[i]!.record_id;
      const list: HistoryEntry[] = [];
      for (; i < chunks.length && chunks[i]!.record_id === id; i++) list.push(...decodeEntries(chunkText(chunks[i]!.data)));
      const now = current.get(this.dataset, id) as string | undefined;
      let rec: DatasetRecord | null = now === undefined ? null : (JSON.parse(now) as DatasetRecord);
      for (let k = list.length - 1; k >= 0 && list[k]!.seq > seq; k--) rec = undo(rec, list[k]!, id);
      changed.set(id, rec === null ? null : recordJson(rec));
    }
    const ids = [...changed.keys()].sort(compareIds);
    let k = 0;
    const owned = this.conn.prepare(`SELECT record_id, owned, json FROM records WHERE dataset = ? AND record_id > ? ORDER BY record_id LIMIT 1000`);
    let after = '';
    const emitChanged = function* (upTo: string | null): Generator<RecordText & { owned: boolean }> {
      while (k < ids.length && (upTo === null || compareIds(ids[k]!, upTo) < 0)) {
        const id = ids[k++]!;
        const json = changed.get(id);
        if (json != null) yield { record_id: id, json, owned: true };
      }
    };
    for (;;) {
      const page = owned.all(this.dataset, after) as Array<{ record_id: string; owned: number; json: string }>;
      for (const r of page) {
        yield* emitChanged(r.record_id);
        if (changed.has(r.record_id)) {
          k++;
          const json = changed.get(r.record_id);
          if (json != null) yield { record_id: r.record_id, json, owned: r.owned === 1 };
        } else yield { record_id: r.record_id, json: r.json, owned: r.owned === 1 };
        after = r.record_id;
      }
      if (page.length < 1000) break;
    }
    yield* emitChanged(null);
  }
}

/** A chunk's text: deflated once full, text while it grows. */
export function chunkText(data: string | Buffer): string {
  return typeof data === 'string' ? data : inflateRawSync(data).toString('utf8');
}

function toVersion(r: VersionRow): HistoryVersion {
  return {
    seq: r.seq,
    version: r.version,
    at: r.at,
    kind: r.kind,
    planId: r.plan_id,
    file: r.file,
    fileHash: r.file_hash,
    detail: r.detail === null ? null : (JSON.parse(r.detail) as Record<string, unknown>),
  };
}

/** The oldest point kept, in words. */
function keptWords(oldest: HistoryVersion): string {
  return oldest.version === null ? 'the state before the first publish' : `version ${oldest.version}`;
}
