import { systemClock, type Clock } from '../clock.js';
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { ConnectorError } from '../errors.js';
import { currentBootId, currentMachineId, type LockOwner, type LockRow, type LockTable } from '../snapshot/locks.js';
import { checkpoint } from './executor/interrupt.js';
import { event } from '../log/events.js';

/** How the shared per-dataset lock is held and waited for. */
export interface LockSettings {
  /** Who this process is, for the message another one shows ("the daemon"). */
  label: string;
  /** How long to wait for a lock another process holds, in ms. */
  waitMs: number;
  /** Lease of a held lock, refreshed every third of it, in ms. */
  leaseMs: number;
  /** Between two tries while waiting, in ms. */
  pollMs: number;
}

/** Defaults: a daemon waits half a minute for a CLI command; leases a minute. */
export const DEFAULT_LOCK_SETTINGS: LockSettings = { label: 'the daemon', waitMs: 30_000, leaseMs: 60_000, pollMs: 250 };

/** Another process works on the dataset (exit 75 for a CLI command: try again). */
export class DatasetBusyError extends ConnectorError {
  constructor(dataset: string, holder: LockRow | null) {
    const who = holder ? `${holder.label} (pid ${holder.pid}${where(holder)})` : 'another process';
    super('DATASET_BUSY', `${who} is working on ${dataset}; try again`, {
      action: 'retry',
      context: { dataset, ...(holder ? { pid: holder.pid, host: holder.host, purpose: holder.purpose } : {}) },
    });
  }
}

/** Where a holder runs, for the message: nothing on this machine, else its host (said to be another machine when the hostname is ours). */
function where(holder: LockRow): string {
  const mine = currentMachineId();
  const here = holder.machineId && mine ? holder.machineId === mine : holder.host === hostname();
  if (here) return '';
  return holder.host === hostname() ? ` on another machine named ${holder.host}` : ` on ${holder.host}`;
}

/**
 * The per-dataset lock shared by every process using one state database
 * (snapshot/locks.ts): waited for up to `waitMs`, its lease refreshed while
 * held. Leases are wall-clock time: processes compare them with each other.
 */
export class SharedLocks {
  readonly #owner: LockOwner;

  constructor(
    private readonly table: LockTable,
    private readonly settings: LockSettings,
    private readonly logger: Logger,
    /** The one clock (src/clock.ts): lease stamps, the wait's polls, the lease's refresh. */
    private readonly clock: Clock = systemClock,
  ) {
    this.#owner = { id: randomUUID(), pid: process.pid, host: hostname(), machineId: currentMachineId(), bootId: currentBootId(), label: settings.label };
  }

  /** Run `fn` holding `dataset`'s lock; DatasetBusyError when another process keeps it past `waitMs`, InterruptedError when `signal` aborts the wait. */
  async run<T>(dataset: string, purpose: string, signal: AbortSignal | undefined, fn: () => Promise<T>): Promise<T> {
    const release = await this.hold(dataset, purpose, { signal });
    try {
      return await fn();
    } finally {
      release();
    }
  }

  /**
   * Take the lock `name` (a dataset, or a name no dataset can have) and keep
   * its lease fresh until the returned function gives it back. Waits up to
   * `waitMs` for another holder; then throws `busy(holder)` (DatasetBusyError
   * by default). `onLost` hears that the lease ran out and another took it.
   */
  async hold(
    name: string,
    purpose: string,
    opts: { signal?: AbortSignal | undefined; busy?: (holder: LockRow | null) => Error; onLost?: () => void } = {},
  ): Promise<() => void> {
    const { waitMs, leaseMs, pollMs } = this.settings;
    const { signal, busy = (holder) => new DatasetBusyError(name, holder) } = opts;
    const deadline = this.clock.now() + waitMs;
    let waited = false;
    for (;;) {
      checkpoint({ dataset: name, signal });
      let holder: LockRow | null;
      try {
        holder = this.table.tryAcquire(name, this.#owner, purpose, this.clock.now(), leaseMs);
      } catch (err) {
        if (!String((err as { code?: unknown }).code ?? '').startsWith('SQLITE_BUSY')) throw err;
        holder = this.table.get(name);
      }
      if (holder === null) break;
      if (this.clock.now() >= deadline) throw busy(holder);
      if (!waited) {
        waited = true;
        this.logger.info(event('sync.skipped', { kind: 'dataset_busy', dataset: name, purpose, holder: holder.label, pid: holder.pid, waitMs }), 'another process works on the dataset; waiting');
      }
      await this.clock.sleep(Math.max(1, Math.min(pollMs, deadline - this.clock.now())));
    }
    // Refreshed every third of the lease: one clock.after at a time, the next set by the last (a repeating timer).
    const every = Math.max(1, Math.floor(leaseMs / 3));
    let cancel: (() => void) | null = null;
    const refresh = (): void => {
      cancel = null;
      try {
        if (!this.table.refresh(name, this.#owner.id, this.clock.now(), leaseMs)) {
          // someone else's now: nothing left to refresh
          if (opts.onLost) opts.onLost();
          else this.logger.warn(event('sync.failed', { kind: 'lock_lost', dataset: name, purpose }), 'the dataset lock ran out and was taken over');
          return;
        }
      } catch {
        // The next refresh tries again; the lease has two more thirds to run.
      }
      if (!released) cancel = this.clock.after(every, refresh, `lock refresh ${name}`);
    };
    let released = false;
    cancel = this.clock.after(every, refresh, `lock refresh ${name}`);
    return () => {
      released = true;
      cancel?.();
      try {
        this.table.release(name, this.#owner.id);
      } catch {
        // A lease not released runs out.
      }
    };
  }
}
