import type { Logger } from 'pino';
import type { DatasetClient } from '../../api/client.js';
import type { Clock } from '../../clock.js';
import type { StateDb } from '../../snapshot/db.js';
import type { RowError } from '../../model/row-error.js';
import type { SnapshotStore } from '../../snapshot/store.js';
import type { TallyAhead } from '../../snapshot/tallies.js';
import type { Policy } from '../../config/policy.js';
import type { SyncSummary } from '../outcome.js';

/** What execute, resume, approve and discard work with for one dataset. */
export interface ExecContext {
  dataset: string;
  db: StateDb;
  store: SnapshotStore;
  client: DatasetClient;
  policy: Policy;
  logger: Logger;
  clock: Clock;
  /** Directory of plan files. */
  planDir: string;
  summary: SyncSummary;
  /** Rows the server refused in this run (A3), by source file line, for the reject file. */
  refused: RowError[];
  /** Stop between journaled steps when aborted (interrupt.ts). */
  signal?: AbortSignal;
  /** The last plan this run confirmed (published, or nothing to send) and the records' generation read in that transaction (issue 18's kept rows). */
  confirmed?: { planId: string; generation: number };
  /** Issue 18: the tallies of a first sync's records, counted while the server works on its replace (taken by the ledger's published). */
  tallyAhead?: TallyAhead;
}
