import type { DatasetConfig } from '../config/schema.js';
import type { FileSyncer, LastFile } from '../files/ports.js';
import type { ReapplyMarker } from '../snapshot/dataset-state.js';
import type { HeldDraft, RebuildReport } from '../snapshot/types.js';
import type { WaitingFile } from '../snapshot/waiting-files.js';
import type { SyncSummary } from '../sync/outcome.js';

/**
 * What the daemon needs of the sync engine (src/sync/engine.ts). Kept narrow
 * so the daemon's own tests and the engine can each change behind it.
 */
export interface DaemonEngine extends FileSyncer {
  /** Read the published records from the server and repair drift in the snapshot (when the engine offers it); says what the rebuild found. */
  reconcile?(ds: DatasetConfig, opts?: { signal?: AbortSignal }): Promise<{ rebuilt: RebuildReport | null }>;
  /** Finish work the journal says was in flight when the process last stopped. */
  resume(ds: DatasetConfig, opts?: { signal?: AbortSignal }): Promise<unknown>;
  /** Drop history older than the dataset's retention (issue 14), when the engine keeps one; never throws (logs a failure). */
  pruneHistory?(ds: DatasetConfig): unknown;
}

/** What the daemon reads of the state database. */
export interface DaemonState extends LastFile {
  /** The held or staged draft of the dataset, or null. */
  held(dataset: string): HeldDraft | null;
  /**
   * Forget the last export's content hash (not its row count), so the next
   * export with that content is synced, not skipped; with `reapply`, remember
   * in the same transaction that it is applied again after drift.
   */
  forgetFileHash(dataset: string, reapply?: ReapplyMarker): void;
  /** The last re-apply after drift, or null. */
  lastReapply(dataset: string): ReapplyMarker | null;
  /**
   * The last re-apply, if of the export with content `hash`: done (it ran or gave way to another export, so a
   * restart does not queue it again) or repeated (the same drift came back after it: not applied again).
   */
  markReapply(dataset: string, hash: string, status: 'done' | 'repeated'): void;
  /** Paused by a person (`pause`, issue 14): exports are not taken; read at each export, so no restart is needed. */
  paused?(dataset: string): { at: number; by: string } | null;
  /** One feed paused by a person (`pause <dataset> --feed F`): its files wait, its schedules skip; read at each file job. */
  feedPaused?(dataset: string, feed: string): { at: number; by: string } | null;
  /** The files of the dataset's own feeds kept while their sync waits for a person (status shows them), and the end of such a wait. */
  waiting?: {
    wait(dataset: string, w: WaitingFile): void;
    done(dataset: string, file: string): void;
    all(dataset: string): WaitingFile[];
  };
}
