import type { DatasetConfig } from '../config/schema.js';
import type { LinkPolicy } from '../sources/open-file.js';
import type { SyncSummary } from '../sync/outcome.js';
import type { SharedRead } from '../sync/executor/shared-read.js';
import type { SourceRead } from '../sync/executor/source-read.js';

/**
 * What a file's life needs of the daemon around it, kept narrow so that this
 * folder never imports src/daemon/ (which runs the file jobs).
 */

/** The sync engine (src/sync/engine.ts): syncs one export file. */
export interface FileSyncer {
  /**
   * Sync one export file; one at a time per dataset (the daemon's queue already ensures it).
   * `signal` stops it between journaled steps (result interrupted; the next start resumes it).
   */
  sync(ds: DatasetConfig, input: { file: string; links?: LinkPolicy; sha256?: string; read?: SourceRead | null }, opts?: { signal?: AbortSignal; publish?: boolean }): Promise<SyncSummary>;
  /**
   * Read one file once for several datasets (issue 13's fan-out; src/sync/engine.ts readShared): each one's read
   * goes to its `sync` as `input.read`. Absent: each sync reads the file itself.
   */
  readShared?(views: readonly DatasetConfig[], input: { file: string; links?: LinkPolicy; sha256?: string }): Promise<SharedRead>;
  /**
   * Run the dataset's feeds on these files as one plan (issue 13; src/sync/engine.ts syncFeedFiles): the
   * summary's `files` says what became of each. Absent: the daemon syncs one file at a time.
   */
  syncFeedFiles?(ds: DatasetConfig, inputs: ReadonlyArray<{ feed: string; file: string; links?: LinkPolicy; sha256?: string }>, opts?: { signal?: AbortSignal }): Promise<SyncSummary>;
}

/** What a file job reads of the state database. */
export interface LastFile {
  /** Content hash of the last export processed for the dataset, or null. */
  lastFileHash(dataset: string): string | null;
}

/** The health reasons of /healthz (src/daemon/health-state.ts), one per dataset and topic. */
export interface HealthReasons {
  set(dataset: string, topic: string, code: string, message: string, now: number): void;
  clear(dataset: string, topic: string): void;
}
