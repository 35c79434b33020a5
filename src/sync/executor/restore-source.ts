import type Database from 'better-sqlite3';
import { sha256 } from '../../model/canonical.js';
import { NEVER_FOLLOW } from '../../sources/open-file.js';
import type { OwnershipMode } from '../../config/policy.js';
import type { SourceRead } from './source-read.js';
import { SourceSorter } from '../disk/source-sorter.js';
import { HistoryReader, type HistoryPoint, type HistoryVersion } from '../../history/reader.js';

/** A restore's target: the history point and the records it brings back, as a source the sync pipeline plans from. */
export interface RestoreTarget {
  point: HistoryVersion;
  src: SourceRead;
}

/** How a point is named to a person. */
export function pointLabel(p: HistoryVersion): string {
  return p.version === null ? `the state before the first publish (${new Date(p.at).toISOString()})` : `version ${p.version} (${new Date(p.at).toISOString()})`;
}

/**
 * The published state at `point` from the history, written sorted into
 * `workDir` as the source of a sync (the same diff, planner and guards as an
 * export). With ownership source, records the connector does not own now are
 * left out: the diff leaves them alone rather than adopting them.
 */
export function restoreSource(conn: Database.Database, dataset: string, point: HistoryPoint, ownership: OwnershipMode, workDir: string): RestoreTarget {
  const h = new HistoryReader(conn, dataset);
  const at = h.seqOf(point);
  const sorter = new SourceSorter(workDir);
  let n = 0;
  for (const r of h.stateAt(at.seq)) {
    if (ownership === 'source' && !r.owned) continue;
    sorter.add(r.record_id, 0, r.json);
    n++;
  }
  const sorted = sorter.finish(() => undefined);
  const label = `restore of ${pointLabel(at)}`;
  return {
    point: at,
    src: {
      file: label,
      // Names the point, not the bytes: the same restore planned twice is the same "export" (held-gate's same-file test).
      fileHash: sha256(`restore\0${dataset}\0${at.seq}\0${at.version ?? ''}`),
      bytes: 0,
      rows: n,
      records: n,
      sorted,
      rowErrors: [],
      rejected: null,
      rejectFile: null,
      importability: { importable: false, reason: 'a restore has no export file to upload' },
      links: NEVER_FOLLOW,
      virtual: true,
    },
  };
}
