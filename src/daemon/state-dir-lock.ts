import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { ConnectorError } from '../errors.js';
import type { StateDb } from '../snapshot/db.js';
import { currentMachineId, type LockRow } from '../snapshot/locks.js';
import { SharedLocks } from '../sync/process-lock.js';

/**
 * The lock of the daemon serving a state_dir: a row of the same lock table
 * the datasets use (snapshot/locks.ts, with its lease and its machine-id,
 * boot-id and pid rules for a holder that is gone), under a name no dataset
 * can have (DATASET_NAME starts with a letter or digit). CLI commands do
 * not take it: they work beside the daemon under the per-dataset locks.
 */
export const STATE_DIR_LOCK = '*daemon';

/** Lease of the state-dir lock, refreshed every third of it: how long a holder that cannot be checked (another machine) blocks after it died. */
export const STATE_DIR_LEASE_MS = 60_000;

/** Another daemon serves this state_dir (exit 75: it may stop, or a dead holder's lease run out). */
export class StateDirBusyError extends ConnectorError {
  constructor(stateDir: string, holder: LockRow | null) {
    const who = holder ? describeHolder(holder) : 'another process';
    const until = holder ? ` If that daemon no longer runs, its claim lapses at ${new Date(holder.expiresAt).toISOString()}.` : '';
    super(
      'STATE_DIR_BUSY',
      `state_dir ${stateDir} is served by another dataset-connector daemon: ${who}. ` +
        `Two daemons on one state_dir would take each other's exports and drafts, so this one did not start.${until}`,
      {
        action: 'retry',
        context: { state_dir: stateDir, ...(holder ? { pid: holder.pid, host: holder.host, since: holder.acquiredAt } : {}) },
      },
    );
  }
}

/** "pid 123 on this machine (host shop-srv), since 2025-…" or the same naming another machine. */
function describeHolder(h: LockRow): string {
  const mine = currentMachineId();
  const here = h.machineId && mine ? h.machineId === mine : h.host === hostname();
  const machine = h.machineId ? `, machine id ${h.machineId.slice(0, 8)}…` : '';
  const where = here ? `on this machine (host ${h.host})` : `on another machine (host ${h.host}${machine})`;
  return `pid ${h.pid} ${where}, since ${new Date(h.acquiredAt).toISOString()}`;
}

/**
 * Claim `db`'s state_dir for this daemon at once (no wait), or throw
 * StateDirBusyError naming the daemon that has it. A holder that is gone (a
 * crash, a reboot: see LockTable) does not block. Returns the function that
 * gives the claim back at stop; `onLost` hears that the lease ran out and
 * another daemon took it (this process was suspended past its lease).
 */
export function holdStateDir(db: StateDb, stateDir: string, logger: Logger, onLost: () => void, clock: Clock): Promise<() => void> {
  const locks = new SharedLocks(db.locks, { label: 'the daemon', waitMs: 0, leaseMs: STATE_DIR_LEASE_MS, pollMs: 250 }, logger, clock);
  return locks.hold(STATE_DIR_LOCK, 'serve', { busy: (holder) => new StateDirBusyError(stateDir, holder), onLost });
}
