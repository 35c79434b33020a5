import type { Logger } from 'pino';
import type { DatasetConfig } from '../config/schema.js';
import { event } from '../log/events.js';
import { canonicalJson, sha256 } from '../model/canonical.js';
import type { RebuildReport } from '../snapshot/types.js';
import { fateDir } from '../files/archive.js';
import { findArchivedExport } from '../files/archive-lookup.js';
import type { DatasetJob } from '../triggers/queue.js';
import type { ReadyFile } from '../files/ready-file.js';
import type { HealthState } from './health-state.js';
import type { DaemonState } from './ports.js';
import type { Clock } from '../clock.js';

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

/**
 * Pure: a fingerprint of the drift to repair, so the same drift seen again
 * after the same export was applied again is recognised (a server that
 * normalises a field shows it after every re-apply). Edits count by record and
 * field; deletions and additions by number, as the rebuild reports no ids.
 */
export function driftFingerprint(r: RebuildReport, drift: Drift): string {
  const edits = drift.edited === 0 ? [] : r.foreignEdits.map((e) => [e.record_id, [...e.fields].sort()] as const).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return sha256(canonicalJson({ edits, deleted: drift.deleted, added: drift.added }));
}

/** What repairDrift needs of its dataset runtime. */
export interface DriftRepairDeps {
  state: DaemonState;
  logger: Logger;
  health: HealthState;
  /** The one clock (src/clock.ts). */
  clock: Clock;
  /** Put a job on the dataset's queue; false when it is stopped. */
  push(job: DatasetJob): boolean;
  /** True when an export already waits: in the queue, or for its retry. */
  exportWaiting(): boolean;
}

/** Health topic of a drift that applying the export again did not repair. */
const HEALTH_TOPIC = 'drift';

/**
 * After a reconcile rebuilt the snapshot: when the server drifted from the
 * last export in records we own, have that export applied again, since the
 * daemon otherwise skips an export whose content it already processed and the
 * dataset would stay as the portal left it until the shop's data changes.
 *
 * The last export's hash is forgotten, and the re-apply remembered with it
 * (in the state db, so this outlives a restart), then the export itself is
 * re-queued from processed/ when it is still there. It goes through the
 * normal queue and sync: guards, ownership (on_foreign_edit: keep) and
 * newer-file-wins apply, and it runs only if no other export was processed
 * first; an export already waiting in the queue or for its retry goes
 * instead. Not archived (after: delete or leave, pruned, a reread or command
 * export), the next export is synced even with the same content. A held
 * change is left alone: applying the older export would replace the change
 * that waits for a person. The same drift again after the same export was
 * applied again is not repaired again (it would publish a version at every
 * reconcile, for ever): health says so until the drift or the export changes.
 */
export async function repairDrift(ds: DatasetConfig, rebuilt: RebuildReport | null, deps: DriftRepairDeps): Promise<void> {
  if (!rebuilt) return;
  const drift = driftToRepair(rebuilt, ds.policy);
  if (drift.edited + drift.deleted + drift.added === 0) {
    // The server matches the snapshot; a drift not repaired (repeated) is still what the export would change.
    driftHealth(ds, deps);
    return;
  }
  const log = deps.logger;
  const hash = deps.state.lastFileHash(ds.name);
  const last = deps.state.lastReapply(ds.name);
  if (hash === null) {
    // A re-queued export not yet run (waiting for its retry, say) repairs this too.
    const pending = last?.status === 'pending';
    const reason = pending ? 'reapply_pending' : 'no_export_known';
    log.info(event('reconcile.reapply', { ...drift, action: 'none', reason, file_hash: pending ? last.hash : null }), 'drift found: the next export repairs it');
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
  const fingerprint = driftFingerprint(rebuilt, drift);
  if (last && last.hash === hash && last.drift === fingerprint) {
    log.warn(
      event('reconcile.reapply', { ...drift, action: 'none', reason: 'repeated', file_hash: hash }),
      'drift found again after the last export was applied again: not applying it again',
    );
    deps.state.markReapply(ds.name, hash, 'repeated');
    driftHealth(ds, deps);
    return;
  }
  const marker = (pending: boolean) => ({ hash, drift: fingerprint, status: pending ? ('pending' as const) : ('done' as const) });
  if (deps.exportWaiting()) {
    // A newer export is next anyway (or once its retry is due); with the hash forgotten it is synced even if its content is the same.
    deps.state.forgetFileHash(ds.name, marker(false));
    driftHealth(ds, deps);
    log.info(
      event('reconcile.reapply', { ...drift, action: 'marker_cleared', reason: 'export_waiting', file_hash: hash }),
      'drift found: the waiting export is synced even if its content is the same',
    );
    return;
  }
  const found = await archivedExport(ds, hash);
  // Pending in the state db before it is queued: a crash before it runs has it queued again at start.
  deps.state.forgetFileHash(ds.name, marker(found.file !== null));
  driftHealth(ds, deps);
  if (found.file && deps.push({ kind: 'file', origin: 'reapply', file: found.file, reapplyOf: hash })) {
    log.info(
      event('reconcile.reapply', { ...drift, action: 'requeued', file: found.file.path, file_hash: hash }),
      'drift found: the last export is applied again',
    );
    return;
  }
  const reason = found.file ? 'stopping' : found.reason;
  log.info(
    event('reconcile.reapply', { ...drift, action: 'marker_cleared', reason, code: found.code, dir: found.dir, file_hash: hash }),
    'drift found: the next export is synced even if its content is the same',
  );
}

/**
 * At start: a re-apply queued before the daemon stopped (or crashed) that
 * never ran is queued again, through the normal queue (newer-file-wins: any
 * export from the folder goes instead). Not there any more: the hash stays
 * forgotten, so the next export with that content is synced.
 */
export async function requeuePendingReapply(ds: DatasetConfig, deps: Pick<DriftRepairDeps, 'state' | 'logger' | 'push'>): Promise<void> {
  const last = deps.state.lastReapply(ds.name);
  if (last?.status !== 'pending') return;
  // An export was processed since: it is newer than the one to apply again.
  if (deps.state.lastFileHash(ds.name) !== null) {
    deps.state.markReapply(ds.name, last.hash, 'done');
    return;
  }
  const found = await archivedExport(ds, last.hash);
  if (found.file && deps.push({ kind: 'file', origin: 'reapply', file: found.file, reapplyOf: last.hash })) {
    deps.logger.info(
      event('reconcile.reapply', { action: 'requeued', reason: 'pending_at_start', file: found.file.path, file_hash: last.hash }),
      'the last export is applied again: its re-apply had not run when the daemon stopped',
    );
    return;
  }
  if (found.file) return; // stopping already: it stays pending for the next start
  deps.state.markReapply(ds.name, last.hash, 'done');
  deps.logger.info(
    event('reconcile.reapply', { action: 'marker_cleared', reason: found.reason, code: found.code, dir: found.dir, file_hash: last.hash }),
    'the next export is synced even if its content is the same',
  );
}

/**
 * Health of the dataset's drift repair: degraded (DRIFT_REPEATED) while the
 * last export is the one whose re-apply the same drift followed, so it was not
 * applied again; clear once the export or the drift changes. Call at start,
 * after a reconcile and after an export is processed.
 */
export function driftHealth(ds: DatasetConfig, deps: Pick<DriftRepairDeps, 'state' | 'health' | 'clock'>): void {
  const last = deps.state.lastReapply(ds.name);
  if (last?.status !== 'repeated' || deps.state.lastFileHash(ds.name) !== last.hash) {
    deps.health.clear(ds.name, HEALTH_TOPIC);
    return;
  }
  const message =
    'the server showed the same drift again after the last export was applied again (a field the server changes, or someone who edits these records each time?); it is not applied again until the export or the drift changes';
  deps.health.set(ds.name, HEALTH_TOPIC, 'DRIFT_REPEATED', message, deps.clock.now());
}

/** The newest export archived in processed/ with content `hash`, or why there is none. */
async function archivedExport(
  ds: DatasetConfig,
  hash: string,
): Promise<{ file: ReadyFile; reason?: never; code?: never; dir?: never } | { file: null; reason: string; code: string | null; dir: string | null }> {
  const dir = ds.watch?.after === 'move' ? fateDir(ds.watch, 'processed') : null;
  if (!dir) return { file: null, reason: ds.watch ? `after_${ds.watch.after}` : 'not_watched', code: null, dir };
  try {
    const file = await findArchivedExport(dir, hash);
    return file ? { file } : { file: null, reason: 'not_archived', code: null, dir };
  } catch (err) {
    return { file: null, reason: 'archive_unreadable', code: (err as NodeJS.ErrnoException).code ?? 'INTERNAL', dir };
  }
}
