import type { Logger } from 'pino';
import type { ErrorAction } from '../errors.js';
import { event } from '../log/events.js';
import type { UpdateTally } from '../feeds/merge-update.js';

/**
 * The result of one sync and its one `sync.summary` log line. `result` is
 * derived from what the server confirmed, so the line cannot say "published"
 * when nothing was sent.
 */

/** How a sync ended. */
export type SyncResult =
  /** The server confirmed the change (publish 200, job PUBLISHED, write status published). */
  | 'published'
  /** Source and published dataset were already equal: nothing to send. */
  | 'unchanged'
  /** A guard held the change for a person (approve | discard). */
  | 'held'
  /** Staged as a draft that a person must publish in the portal (key without publish role). */
  | 'staged'
  /** A foreign draft blocks the dataset (on_foreign_draft: wait). */
  | 'waiting'
  /** The file or rows were refused; nothing from it was published. */
  | 'rejected'
  /** The server refused or a job failed; the snapshot is unchanged. */
  | 'failed'
  /** The dataset cannot go on (auth, API switch, dataset gone). */
  | 'stopped'
  /** Stopped between two steps on request (the daemon stopping); its plan stays open and is resumed. */
  | 'interrupted'
  /** The dataset is paused by a person (`pause`, issue 14): nothing was read or sent; it passes after `resume`. */
  | 'paused';

/** Everything an operator needs to know about one sync. */
export interface SyncSummary {
  dataset: string;
  file: string | null;
  fileHash: string | null;
  rows: number;
  rowErrors: number;
  adds: number;
  changes: number;
  deletes: number;
  owned: number;
  notOwned: number;
  path: 'per_record' | 'replace' | 'import' | 'none';
  pathReason: string;
  requests: number;
  retries: number;
  guards: { held: boolean; reasons: string[] };
  version: number | null;
  durationMs: number;
  result: SyncResult;
  /** Stable code when the result is not published/unchanged. */
  code: string | null;
  /** What to do next (the failure's action, src/errors.ts): retry later, hold for a person, reject the input, stop; null when published/unchanged. */
  action: ErrorAction | null;
  message: string | null;
  warnings: string[];
  /** The feed whose file this was (issue 13), with what its rows matched; absent for a dataset of one full feed. */
  feed?: FeedSummary;
  /** Several files made this one plan (issue 13, the daemon's coalescing): each file, its feed and what became of it. */
  files?: FeedFileOutcome[];
  /** Several files made this one plan: one entry per feed, its files' counts added up (`feed` is the lead feed's), with the rows they had. */
  feeds?: Array<FeedSummary & { rows: number }>;
  /** A file rejected for its rows: the first row errors, and the reject file that lists them all (as plan names them). */
  firstRowErrors?: RowErrorBrief[];
  rejectFile?: string | null;
  /** Issue 18 (policy unchanged_rows): how the export was read, through the last published export's kept rows or in full, and why in full. */
  read?: { path: 'unchanged-rows' | 'full'; reason: string | null };
}

/** A row error as a rejection's message names it; the reject file has the reason. */
export interface RowErrorBrief {
  line: number;
  column: string;
  code: string;
}

/** One file of a coalesced plan (issue 13): planned (it went into the plan, whose result is its result) or rejected alone. */
export interface FeedFileOutcome {
  file: string;
  feed: string;
  outcome: 'planned' | 'rejected' | 'not_run';
  /** Why it was rejected (its own read, or its rows under on_row_errors). */
  code: string | null;
  message: string | null;
  /** What its rows matched (a file of a dataset with feeds). */
  matched?: FeedSummary;
}

/**
 * A feed's part of the summary (issue 13): what its merge tallied (feeds/merge-update.ts; the fields' meanings
 * are there), with the first unmatched ids instead of every unmatched row.
 */
export interface FeedSummary extends Omit<UpdateTally, 'unmatchedIds' | 'notOwnedIds'> {
  name: string;
  role: 'full' | 'update' | 'changes';
  /** The first unmatched record ids. */
  firstUnmatched: string[];
  /** The first ids of records the feed's rows name that the connector does not own (not its change list's deletes); absent: none. */
  firstNotOwned?: string[];
  /** A change list's delete rows of records the connector does not own (not deleted), and the first of them by id and line; absent: none. */
  deletesNotOwned?: number;
  firstDeletesNotOwned?: Array<{ record_id: string; line: number }>;
  /** Unmatched rows the reject file lists when that is fewer than all (source.max_row_errors_kept); absent: all. */
  unmatchedListed?: number;
}

/** A summary with nothing done yet; the engine fills it in as it goes. */
export function emptySummary(dataset: string, file: string | null): SyncSummary {
  return {
    dataset,
    file,
    fileHash: null,
    rows: 0,
    rowErrors: 0,
    adds: 0,
    changes: 0,
    deletes: 0,
    owned: 0,
    notOwned: 0,
    path: 'none',
    pathReason: '',
    requests: 0,
    retries: 0,
    guards: { held: false, reasons: [] },
    version: null,
    durationMs: 0,
    result: 'unchanged',
    code: null,
    action: null,
    message: null,
    warnings: [],
  };
}

/** The action a result implies when no error gave one (held, staged, waiting: a person; rejected; stopped; interrupted: retry). */
export function actionForResult(result: SyncResult): ErrorAction | null {
  switch (result) {
    case 'published':
    case 'unchanged':
    case 'failed': // a failure's action comes from its error; without one, nothing says it would pass
      return null;
    case 'held':
    case 'staged':
    case 'waiting':
      return 'hold';
    case 'rejected':
      return 'reject';
    case 'stopped':
      return 'stop';
    case 'interrupted':
    case 'paused':
      return 'retry';
  }
}

/** Write requests were sent and nothing says published: never report success then. */
export function finalResult(s: SyncSummary): SyncResult {
  if (s.result === 'published' && s.requests === 0) return 'failed';
  return s.result;
}

/** Log the one `sync.summary` line of a sync, on the dataset's child logger (which carries `dataset`: the line names it once). */
export function logSummary(logger: Logger, s: SyncSummary): void {
  const ok = s.result === 'published' || s.result === 'unchanged';
  const level = ok ? 'info' : s.result === 'held' || s.result === 'staged' || s.result === 'waiting' || s.result === 'interrupted' || s.result === 'paused' ? 'warn' : 'error';
  const { dataset: _bound, ...fields } = s;
  logger[level](event('sync.summary', fields), 'sync summary');
}

/** CLI exit code for a result (PLAN.md: 0 ok, 1 failure, 3 held for a person, 75 temp failure). */
export function exitCodeFor(result: SyncResult): number {
  switch (result) {
    case 'published':
    case 'unchanged':
      return 0;
    case 'held':
    case 'staged':
    case 'waiting':
      return 3;
    case 'stopped':
    case 'rejected':
    case 'failed':
      return 1;
    case 'interrupted':
    case 'paused':
      return 75;
  }
}
