import type Database from 'better-sqlite3';
import { readFileSync } from 'node:fs';

/** Who holds (or wants) a dataset's lock. */
export interface LockOwner {
  /** Unique per lock holder (one engine of one process). */
  id: string;
  pid: number;
  /** For people only; machines with one hostname may share a state folder (machineId tells them apart). */
  host: string;
  /** The machine the process runs on (currentMachineId()); null or absent where it cannot be read. */
  machineId?: string | null;
  /** The boot of that machine the process runs in (currentBootId()); null or absent where it cannot be read. */
  bootId?: string | null;
  /** For people: "the daemon", "a dataset-connector sync command". */
  label: string;
}

/** A held lock as stored. */
export interface LockRow {
  dataset: string;
  ownerId: string;
  pid: number;
  host: string;
  machineId: string | null;
  bootId: string | null;
  label: string;
  purpose: string;
  acquiredAt: number;
  expiresAt: number;
}

interface Row {
  dataset: string;
  owner_id: string;
  pid: number;
  host: string;
  machine_id: string | null;
  boot_id: string | null;
  label: string;
  purpose: string;
  acquired_at: number;
  expires_at: number;
}

/**
 * Per-dataset locks in the state database, so that every process using it
 * (the daemon, a CLI command) works on a dataset one at a time. Taken in a
 * BEGIN IMMEDIATE transaction; a lease refreshed while held. A lease that ran
 * out is taken over, and so is a holder on this machine that is gone: from an
 * earlier boot (its pid may have been reused since) or whose process ended.
 */
export class LockTable {
  constructor(
    private readonly conn: Database.Database,
    /** Whether a process of this host still runs. */
    private readonly alive: (pid: number) => boolean = pidAlive,
  ) {}

  /** Take the lock for `owner` until `now + leaseMs`; returns null when taken, else the current holder. */
  tryAcquire(dataset: string, owner: LockOwner, purpose: string, now: number, leaseMs: number): LockRow | null {
    const take = this.conn.transaction((): LockRow | null => {
      const cur = this.get(dataset);
      if (cur && cur.ownerId !== owner.id && cur.expiresAt > now && !this.#gone(cur, owner)) return cur;
      this.conn
        .prepare(
          `INSERT INTO locks (dataset, owner_id, pid, host, machine_id, boot_id, label, purpose, acquired_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (dataset) DO UPDATE SET owner_id = excluded.owner_id, pid = excluded.pid, host = excluded.host,
             machine_id = excluded.machine_id, boot_id = excluded.boot_id,
             label = excluded.label, purpose = excluded.purpose, acquired_at = excluded.acquired_at, expires_at = excluded.expires_at`,
        )
        .run(dataset, owner.id, owner.pid, owner.host, owner.machineId ?? null, owner.bootId ?? null, owner.label, purpose, now, now + leaseMs);
      return null;
    });
    return take.immediate();
  }

  /**
   * A holder on this machine that cannot still be working: it took the lock
   * in another boot (after a reboot its pid may belong to some other process),
   * or its process is gone. "This machine" is the machine id, not the
   * hostname: cloned VMs or Raspberry Pis left on the default hostname may
   * share a state folder, and one must not take the other's lock because a
   * pid or boot id of its own differs. Holders on other machines, or on a
   * machine that is not known (an older row, no machine id), are left to their lease.
   */
  #gone(cur: LockRow, owner: LockOwner): boolean {
    if (!cur.machineId || !owner.machineId || cur.machineId !== owner.machineId) return false;
    if (cur.bootId && owner.bootId && cur.bootId !== owner.bootId) return true;
    return !this.alive(cur.pid);
  }

  /** Extend a lease we hold; false when it is no longer ours (it ran out and was taken over). */
  refresh(dataset: string, ownerId: string, now: number, leaseMs: number): boolean {
    return this.conn.prepare('UPDATE locks SET expires_at = ? WHERE dataset = ? AND owner_id = ?').run(now + leaseMs, dataset, ownerId).changes === 1;
  }

  /** Give the lock back (only if still ours). */
  release(dataset: string, ownerId: string): void {
    this.conn.prepare('DELETE FROM locks WHERE dataset = ? AND owner_id = ?').run(dataset, ownerId);
  }

  /** The lock of a dataset, if held (or left behind). */
  get(dataset: string): LockRow | null {
    const r = this.conn.prepare('SELECT * FROM locks WHERE dataset = ?').get(dataset) as Row | undefined;
    return r
      ? {
          dataset: r.dataset,
          ownerId: r.owner_id,
          pid: r.pid,
          host: r.host,
          machineId: r.machine_id,
          bootId: r.boot_id,
          label: r.label,
          purpose: r.purpose,
          acquiredAt: r.acquired_at,
          expiresAt: r.expires_at,
        }
      : null;
  }
}

/** True while a process with this id runs on this host (signal 0 checks without signalling). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by another user
  }
}

let bootId: string | null | undefined;

/** This machine's boot id (Linux: /proc/sys/kernel/random/boot_id, new at every boot); null where it cannot be read. */
export function currentBootId(): string | null {
  if (bootId === undefined) {
    try {
      bootId = readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
    } catch {
      bootId = null; // not Linux, or /proc hidden: the pid check and the lease decide
    }
  }
  return bootId;
}

let machineId: string | null | undefined;

/**
 * This machine's id (systemd's /etc/machine-id, else D-Bus's
 * /var/lib/dbus/machine-id; stable across reboots, unlike the hostname unique
 * per installation); null where neither can be read (then only leases decide).
 */
export function currentMachineId(): string | null {
  if (machineId === undefined) {
    machineId = null;
    for (const file of ['/etc/machine-id', '/var/lib/dbus/machine-id']) {
      try {
        const id = readFileSync(file, 'utf8').trim();
        // An empty file (or "uninitialized", systemd's first boot marker) names no machine.
        if (id !== '' && id !== 'uninitialized') {
          machineId = id;
          break;
        }
      } catch {
        // not there: try the next, or stay unknown
      }
    }
  }
  return machineId;
}
