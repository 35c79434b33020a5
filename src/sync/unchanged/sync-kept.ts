import { closeSync, lstatSync, mkdirSync, openSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { DATASET_NAME, type DatasetConfig } from '../../config/schema.js';
import { hasFeeds } from '../../feeds/view.js';
import { event } from '../../log/events.js';
import type { LinkPolicy } from '../../sources/open-file.js';
import type { Changeset } from '../core/changeset.js';
import type { ExecContext } from '../executor/context.js';
import { crashPoint } from '../executor/crash-hook.js';
import type { SourceRead } from '../executor/source-read.js';
import { NEXT_FILE, stampKept, type KeptReadError } from './kept-rows.js';
import { STAMP_FILE, keptDigest, noteUnstamped } from './kept-stamp.js';
import { readAndDiff, type UnchangedDiff } from './unchanged-diff.js';

/**
 * Issue 18 wired into a sync: a dataset of one source without feeds (policy unchanged_rows) reads its export
 * through the kept rows of the last published one, and keeps this export's rows for the next read once, and
 * only once, the plan made of this read is confirmed whole (ledger.published / ledger.unchanged record the
 * records' generation in that transaction). Anything else (a hold, a stage, a dry run, an approve, a partial
 * or failed publish, a plan made of another read) leaves the last stamp, which a changed generation voids.
 */

/** The dataset's own folder of kept rows in the state dir (beside its plans). */
export function keptDirOf(planDir: string, dataset: string): string {
  return join(planDir, `${KEPT_PREFIX}${dataset}`);
}

const KEPT_PREFIX = 'unchanged-rows.';

/**
 * At daemon start (the state dir held): the kept-rows folders of datasets the configuration no longer has, removed,
 * one info line each. Only a real folder named exactly keptDirOf's way for a valid dataset name is touched (never a
 * link, a file or another name a person put there). A dataset renamed or commented out for a while loses its copy:
 * it is only a shortcut, so its next sync reads the export in full once. Returns the folders removed.
 */
export function removeUnconfiguredKept(planDir: string, configured: ReadonlySet<string>, logger: Logger): string[] {
  let names: string[];
  try {
    names = readdirSync(planDir);
  } catch {
    return []; // No plan folder yet (a first start), or unreadable: the first sync says so.
  }
  const removed: string[] = [];
  for (const name of names) {
    if (!name.startsWith(KEPT_PREFIX)) continue;
    const dataset = name.slice(KEPT_PREFIX.length);
    if (!DATASET_NAME.test(dataset) || configured.has(dataset)) continue;
    const dir = join(planDir, name);
    try {
      if (!lstatSync(dir).isDirectory()) continue;
      rmSync(dir, { recursive: true, force: true });
    } catch (err) {
      const e = err as NodeJS.ErrnoException;
      logger.warn(
        event('sync.rows_kept', { kind: 'kept_rows_unconfigured', dir, dataset, error: e.code ?? e.message }),
        `the rows kept for dataset ${dataset}, no longer configured, could not be removed from ${dir} (${e.code ?? e.message}): delete the folder by hand`,
      );
      continue;
    }
    removed.push(dir);
    logger.info(
      event('sync.rows_kept', { kind: 'kept_rows_unconfigured', dir, dataset }),
      `removed ${dir}: dataset ${dataset} is no longer configured (if it comes back, its first sync reads the export in full)`,
    );
  }
  return removed;
}

/**
 * Why the kept rows are not used for this dataset, or null when they are. When not, a copy kept before (the policy
 * was on, the dataset had no feeds) is removed: it takes the export's size in the state dir, and the records this
 * sync writes void it anyway.
 */
export function keptIneligible(ctx: ExecContext, ds: DatasetConfig, shared: boolean): string | null {
  const why = !ctx.policy.unchanged_rows
    ? 'turned off in policy (unchanged_rows: false)'
    : hasFeeds(ds)
      ? 'the dataset has feeds, whose files are merged in full'
      : shared
        ? 'this export feeds several datasets and is read once for all of them'
        : null;
  if (why === null) return null;
  try {
    rmSync(keptDirOf(ctx.planDir, ctx.dataset), { recursive: true, force: true });
  } catch {
    // Left for a person (not ours to remove, or in use): an unused copy costs disk space, never a sync.
  }
  return why;
}

/** An export read through the kept rows: its diff, and what stamping needs. */
export interface KeptRead {
  dir: string;
  digest: string;
  diff: UnchangedDiff;
}

/**
 * The export read through the kept rows, or why it is read in full instead: a kept-rows folder this process
 * cannot write (left owned by another user, a name in the way) costs the shortcut, never the sync.
 */
export async function readKept(ctx: ExecContext, ds: DatasetConfig, file: string, workDir: string, links?: LinkPolicy, sha256?: string): Promise<KeptRead | { reason: string }> {
  const dir = keptDirOf(ctx.planDir, ctx.dataset);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const next = join(dir, NEXT_FILE);
    rmSync(next, { force: true });
    closeSync(openSync(next, 'w', 0o600));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    ctx.logger.warn(
      event('sync.rows_kept', { kind: 'kept_rows', dir, error: e.code ?? e.message }),
      `rows of the last export cannot be kept in ${dir} (${e.code ?? e.message}): the export is read in full; make the folder writable by the service user, or remove it`,
    );
    return { reason: `cannot write ${dir} (${e.code ?? e.message}): make it writable by the service user, or delete it` };
  }
  let warned = false;
  const onCopyError = (error: string): void => {
    if (warned) return;
    warned = true;
    ctx.logger.warn(
      event('sync.rows_kept', { kind: 'kept_rows', dir, error }),
      `the copy of this export for the next sync could not be written in ${dir} (${error}): this sync goes on without it and the next export is read in full; free space on the disk holding the state dir`,
    );
  };
  const onReadError = (e: KeptReadError): void => {
    ctx.logger.warn(
      event('sync.rows_kept', { kind: 'kept_rows', file: e.file, error: e.code }),
      `the copy of the last published export ${e.file} could not be read (${e.code}): this sync reads the export in full and the next publish replaces the copy; if this repeats, check the disk holding the state dir (system log, disk health)`,
    );
  };
  const diff = await readAndDiff(file, ds.source, ds.mapping, workDir, { keptDir: dir, store: ctx.store, policy: ctx.policy, onCopyError, onReadError, ...(links ? { links } : {}), ...(sha256 ? { sha256 } : {}) });
  return { dir, digest: keptDigest(ds.source, ds.mapping), diff };
}

/** The kept read's changeset when the records are still as it was diffed against (else the sync diffs again). */
export function keptChangeset(ctx: ExecContext, kept: KeptRead): Changeset | null {
  const d = kept.diff;
  return d.changeset !== null && d.generation !== null && ctx.store.generation() === d.generation ? d.changeset : null;
}

/**
 * Stamp the rows this read kept as the published export's: only when `planId` (made of this read) was the plan
 * just confirmed, with nothing refused; `diffGeneration` (a plan with nothing to send): the records must be
 * as diffed. The generation is the one read in the confirming transaction: a later writer voids the stamp.
 */
export function stampConfirmed(ctx: ExecContext, kept: KeptRead, planId: string, diffGeneration?: number | null): void {
  const c = ctx.confirmed;
  if (!c || c.planId !== planId || ctx.refused.length > 0) return;
  if (diffGeneration !== undefined && diffGeneration !== c.generation) return;
  crashPoint('kept.stamp');
  let stamped: boolean;
  try {
    stamped = stampKept(kept.dir, ctx.store, c.generation, kept.digest);
  } catch (err) {
    // The plan is published: a stamp not written only sends the next read the full way (no stamp is left: stampKept drops it first).
    const e = err as NodeJS.ErrnoException;
    const path = e.path ?? join(kept.dir, STAMP_FILE);
    const error = e.code ?? e.message;
    noteUnstamped(kept.dir, `the last sync could not save ${path} (${error}); this sync reads the export in full and saves a new copy`);
    ctx.logger.warn(
      event('sync.rows_kept', { kind: 'kept_rows', dir: kept.dir, path, error }),
      `rows of this export not kept: ${path} could not be written (${error}), so the next export is read in full; free space on the disk holding the state dir, or make ${kept.dir} writable by the service user (a directory in the way at ${path} is removed by the next publish)`,
    );
    return;
  }
  noteUnstamped(kept.dir, null);
  if (stamped) ctx.logger.info(event('sync.rows_kept', { kind: 'kept_rows', generation: c.generation }), 'rows of this export kept for the next read');
  else ctx.logger.info(event('sync.rows_kept', { kind: 'kept_rows', generation: c.generation, kept: false }), 'rows of this export not kept (not comparable, or the records changed since); the next export is read in full');
}
