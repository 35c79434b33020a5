import type { Logger } from 'pino';
import type { DatasetConfig } from '../config/schema.js';
import { event } from '../log/events.js';
import type { RebuildReport } from '../snapshot/types.js';
import { fateDir } from '../triggers/after.js';
import { findArchivedExport } from '../triggers/archive-lookup.js';
import type { DatasetJob } from '../triggers/queue.js';
import type { DaemonState } from './ports.js';

/** Drift a reconcile found that applying the shop's export again would undo. */
export interface Drift {
  /** Owned records whose fields someone changed on the server (on_foreign_edit: overwrite only). */
  edited: number;
  /** Owned records someone deleted on the server. */
  deleted: number;
  /** Records someone added on the server that the export does not own (ownership: full only). */
  added: number;
}

/**
 * Pure: what of a rebuild's findings the export would put back. With
 * on_foreign_edit: keep a sync keeps the fields edited on the server, so those
 * edits are no drift to repair; with ownership: source records added by hand
 * are not ours and stay.
 */
export function driftToRepair(r: RebuildReport, policy: Pick<DatasetConfig['policy'], 'ownership' | 'on_foreign_edit'>): Drift {
  return {
    edited: policy.on_foreign_edit === 'overwrite' ? r.foreignEdits.length : 0,
    deleted: r.ownedRemoved,
    added: policy.ownership === 'full' ? r.added : 0,
  };
}

/** What repairDrift needs of its dataset runtime. */
export interface DriftRepairDeps {
  state: DaemonState;
  logger: Logger;
  /** Put a job on the dataset's queue; false when it is stopped. */
  push(job: DatasetJob): boolean;
  /** True when an export already waits: in the queue, or for its retry. */
  exportWaiting(): boolean;
}

/**
 * After a reconcile rebuilt the snapshot: when the server drifted from the
 * last export in records we own, have that export applied again, since the
 * daemon otherwise skips an export whose content it already processed and the
 * dataset would stay as the portal left it until the shop's data changes.
 *
 * The last export's hash is forgotten (kept in the state db, so this outlives
 * a restart), then the export itself is re-queued from processed/ when it is
 * still there. It goes through the normal queue and sync: guards, ownership
 * (on_foreign_edit: keep) and newer-file-wins apply, and it runs only if no
 * other export was processed first; an export already waiting in the queue
 * or for its retry goes instead. Not archived (after: delete or leave,
 * pruned, a reread or command export), the next export is synced even with the
 * same content. A held change is left alone: applying the older export would
 * replace the change that waits for a person.
 */
export async function repairDrift(ds: DatasetConfig, rebuilt: RebuildReport | null, deps: DriftRepairDeps): Promise<void> {
  if (!rebuilt) return;
  const drift = driftToRepair(rebuilt, ds.policy);
  if (drift.edited + drift.deleted + drift.added === 0) return;
  const log = deps.logger;
  const hash = deps.state.lastFileHash(ds.name);
  if (hash === null) {
    log.info(event('reconcile.reapply', { ...drift, action: 'none', reason: 'no_export_known' }), 'drift found: the next export repairs it');
    return;
  }
  const held = deps.state.held(ds.name);
  if (held) {
    log.warn(
      event('reconcile.reapply', { ...drift, action: 'none', reason: 'change_held', held: held.kind, version: held.version }),
      'drift found: not applying the last export again while a change waits for a person',
    );
    return;
  }
  deps.state.forgetFileHash(ds.name);
  if (deps.exportWaiting()) {
    // A newer export is next anyway (or once its retry is due); with the hash forgotten it is synced even if its content is the same.
    log.info(
      event('reconcile.reapply', { ...drift, action: 'marker_cleared', reason: 'export_waiting', file_hash: hash }),
      'drift found: the waiting export is synced even if its content is the same',
    );
    return;
  }
  const archiveDir = ds.watch?.after === 'move' ? fateDir(ds.watch, 'processed') : null;
  let archived = null;
  let lookupError: string | null = null;
  if (archiveDir) {
    archived = await findArchivedExport(archiveDir, hash).catch((err: NodeJS.ErrnoException) => {
      lookupError = err.code ?? 'INTERNAL';
      return null;
    });
  }
  if (archived && deps.push({ kind: 'file', origin: 'reapply', file: archived, reapplyOf: hash })) {
    log.info(
      event('reconcile.reapply', { ...drift, action: 'requeued', file: archived.path, file_hash: hash }),
      'drift found: the last export is applied again',
    );
    return;
  }
  const reason = lookupError ? 'archive_unreadable' : archiveDir ? 'not_archived' : ds.watch ? `after_${ds.watch.after}` : 'not_watched';
  log.info(
    event('reconcile.reapply', { ...drift, action: 'marker_cleared', reason, code: lookupError, dir: archiveDir, file_hash: hash }),
    'drift found: the next export is synced even if its content is the same',
  );
}
