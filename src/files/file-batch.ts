import type { DatasetConfig } from '../config/schema.js';
import { ConnectorError } from '../errors.js';
import { feedView } from '../feeds/view.js';
import { event } from '../log/events.js';
import type { FeedFileOutcome, SyncSummary } from '../sync/outcome.js';
import { disposeJob, hashJob, nextForError, nextForResult, skipReason, type FileJobDeps, type FileJobResult, type FileNext } from './file-job.js';
import { linkPolicyFor } from './links.js';
import type { FileOrigin, ReadyFile } from './ready-file.js';

/** One file of a batch: the ready file, where it came from, and its feed (issue 13). */
export interface BatchFile {
  file: ReadyFile;
  origin: FileOrigin;
  feed: string;
}

/**
 * Several ready files of a dataset's feeds as one sync (issue 13, the
 * daemon's coalescing), through the engine's syncFeedFiles: each file is
 * hashed once, the dataset's full export is skipped when it is the last one
 * processed, and the rest make one plan. Then each file's own lifecycle: a
 * file refused on its own goes to failed/ (the others are not held back by
 * it), a file that went into the plan follows the plan's result, and one the
 * sync could not run is kept for the retry. Files are disposed oldest first,
 * so that a crash between two moves leaves only newer files to be taken again
 * (taking a file again applies the same values: nothing is doubled).
 * `jobs` in the order they apply (oldest first); the results in that order.
 */
export async function runFileBatch(ds: DatasetConfig, jobs: readonly BatchFile[], deps: FileJobDeps): Promise<FileJobResult[]> {
  const results: Array<FileJobResult | undefined> = jobs.map(() => undefined);
  const hashes: string[] = [];
  for (const [i, job] of jobs.entries()) {
    const view = feedView(ds, job.feed);
    deps.logger.info(event('file.ready', { file: job.file.path, origin: job.origin, feed: job.feed, bytes: job.file.size }), 'file ready');
    const hashed = await hashJob(view, job, deps);
    if ('next' in hashed) {
      results[i] = hashed;
      continue;
    }
    hashes[i] = hashed.hash;
    // The last export processed is the full feed's: an update feed's file with the same bytes is still applied (it is idempotent).
    if (job.feed === ds.feed && skipReason(hashed.hash, deps.state.lastFileHash(ds.name)) === 'same_content') {
      deps.logger.info(event('file.skipped', { file: job.file.path, origin: job.origin, feed: job.feed, reason: 'same_content', file_hash: hashed.hash }), 'file skipped');
      results[i] = await disposeJob(view, job, nextForResult('skipped'), true, deps, { feed: job.feed });
    }
  }
  const run = jobs.flatMap((job, i) => (results[i] === undefined ? [{ job, i }] : []));
  if (run.length === 0) return results as FileJobResult[];
  const inputs = run.map(({ job, i }) => ({ feed: job.feed, file: job.file.path, links: linkPolicyFor(job.origin, feedView(ds, job.feed).watch), sha256: hashes[i]! }));
  let summary: SyncSummary | null = null;
  let thrown: FileNext | null = null;
  try {
    if (!deps.engine.syncFeedFiles) throw new TypeError('this engine syncs one file at a time');
    summary = await deps.engine.syncFeedFiles(ds, inputs, deps.signal ? { signal: deps.signal } : {});
    deps.onSummary?.(summary);
  } catch (err) {
    deps.onError?.(err);
    const code = err instanceof ConnectorError ? err.code : 'INTERNAL';
    deps.logger.error(event('sync.failed', { files: inputs.map((i) => i.file), code, err }), 'sync failed');
    thrown = nextForError(err);
  }
  for (const [k, { job, i }] of run.entries()) {
    const outcome: FeedFileOutcome | undefined = summary?.files?.[k];
    const next = thrown ?? fateOf(summary!, outcome);
    const accepted = next.next === 'dispose' && next.fate === 'processed' && outcome?.outcome === 'planned';
    const fields = { feed: job.feed, ...(run.length > 1 ? { plan_files: run.length } : {}), ...(outcome?.code ? { code: outcome.code } : {}) };
    results[i] = await disposeJob(feedView(ds, job.feed), job, next, accepted, deps, fields);
  }
  return results as FileJobResult[];
}

/** What becomes of one file of the sync: its own refusal, a retry when it was not run, else the plan's result. */
function fateOf(summary: SyncSummary, outcome: FeedFileOutcome | undefined): FileNext {
  if (outcome?.outcome === 'rejected') return { next: 'dispose', fate: 'failed' };
  if (outcome?.outcome === 'not_run' && summary.result !== 'paused') return { next: 'retry', slow: false };
  return nextForResult(summary.result);
}
