import type { StateDb } from '../snapshot/db.js';
import { openPlan } from './executor/ledger.js';
import { FeedState } from '../feeds/state.js';
import { FeedPauses } from '../snapshot/feed-pauses.js';
import { ExportTakers } from '../snapshot/export-takers.js';
import { WaitingFiles } from '../snapshot/waiting-files.js';

/** What `status` shows of one dataset (no network). */
export interface DatasetStatus {
  dataset: string;
  activeVersion: number | null;
  confirmedAt: string | null;
  records: number;
  owned: number;
  notOwned: number;
  lastSync: { result: string; at: string; detail: unknown } | null;
  /** When a sync last published or found nothing to change: beside a refused last attempt, how stale the dataset is. */
  lastSuccessAt: string | null;
  held: { kind: string; version: number | null; reason: string; ageMs: number; since: string } | null;
  openPlan: { planId: string; path: string; ageMs: number } | null;
  /** Paused by a person (issue 14): exports wait in the folder until resume. */
  paused: { since: string; by: string } | null;
  /** Each feed's last file published or found unchanged, and its time (issue 13); every form (the single-source form's is `main`); empty before the first. */
  feeds: Array<{ feed: string; file: string | null; sha256: string | null; fileTime: string; publishedAt: string }>;
  /** Feeds paused on their own (`pause <dataset> --feed F`): their files wait until `resume --feed`; the other feeds go on. */
  pausedFeeds: Array<{ feed: string; since: string; by: string }>;
  /** Files of shared exports this dataset keeps (paused, retrying): they and `newer` files wait in the export's folder for it alone. */
  keptExportFiles: Array<{ export: string; feed: string; file: string; result: string; code: string | null; since: string; newer: number }>;
  /** Files of the dataset's own feeds the daemon keeps while their sync waits for a person (a held change of another feed, a foreign draft): which, since when, why (the message names the command that ends the wait). */
  waitingFiles: Array<{ feed: string; file: string; code: string; message: string | null; since: string }>;
}

/** Status of one dataset from the state database. */
export function datasetStatus(db: StateDb, dataset: string, now: number): DatasetStatus {
  const info = db.snapshot(dataset).info();
  const open = openPlan({ db, dataset });
  const paused = db.snapshot(dataset).paused();
  const iso = (ms: number) => new Date(ms).toISOString();
  return {
    dataset,
    activeVersion: info.activeVersion,
    confirmedAt: info.confirmedAt === null ? null : iso(info.confirmedAt),
    records: info.recordCount,
    owned: info.ownedCount,
    notOwned: info.notOwnedCount,
    lastSync: info.lastOutcome ? { result: info.lastOutcome.outcome, at: iso(info.lastOutcome.at), detail: info.lastOutcome.detail } : null,
    lastSuccessAt: ((at) => (at === null ? null : iso(at)))(db.snapshot(dataset).lastSuccessAt()),
    held: info.held
      ? { kind: info.held.kind, version: info.held.version, reason: info.held.reason, ageMs: now - info.held.since, since: iso(info.held.since) }
      : null,
    openPlan: open ? { planId: open.planId, path: open.path, ageMs: now - open.createdAt } : null,
    paused: paused ? { since: iso(paused.at), by: paused.by } : null,
    feeds: new FeedState(db.conn, dataset).files().map((f) => ({ feed: f.feed, file: f.file, sha256: f.sha256, fileTime: iso(f.at), publishedAt: iso(f.publishedAt) })),
    pausedFeeds: new FeedPauses(db.conn, dataset).all().map((p) => ({ feed: p.feed, since: iso(p.at), by: p.by })),
    keptExportFiles: new ExportTakers(db.conn).kept(dataset).map((k) => ({ export: k.export, feed: k.feed, file: k.file, result: k.result, code: k.code, since: iso(k.since), newer: k.newer })),
    waitingFiles: new WaitingFiles(db.conn, dataset).all().map((w) => ({ feed: w.feed, file: w.file, code: w.code, message: w.message, since: iso(w.since) })),
  };
}
