import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import { currentBootId, currentMachineId } from '../../src/snapshot/locks.js';
import { DatasetBusyError, SharedLocks } from '../../src/sync/process-lock.js';
import { tempDir } from './diff-fixtures.js';

/**
 * After a reboot, a lock left in the state db may name a pid that another
 * process got since: a holder from another boot of this host is stale at
 * once, not after its lease. Real SQLite in a temp dir; the "holder" is this
 * test process (alive) written as a row, as another process would have left it.
 */

let t: ReturnType<typeof tempDir>;
let db: StateDb;
beforeEach(() => {
  t = tempDir();
  db = openStateDb(join(t.dir, 'state.db'));
});
afterEach(() => {
  db.close();
  t.cleanup();
});

/** A lock row as a process with a live pid (this one) left it, its lease an hour ahead; by default on this machine. */
function leftBy(bootId: string | null, host = hostname(), machineId: string | null = currentMachineId()): void {
  db.conn
    .prepare('INSERT INTO locks (dataset, owner_id, pid, host, machine_id, boot_id, label, purpose, acquired_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
    .run('shop-1', 'the-other-one', process.pid, host, machineId, bootId, 'the daemon', 'sync', Date.now(), Date.now() + 3_600_000);
}

/** A CLI command's lock that does not wait: it either takes the lock at once or reports the holder. */
function command(): SharedLocks {
  return new SharedLocks(db.locks, { label: 'a dataset-connector sync command', waitMs: 0, leaseMs: 60_000, pollMs: 10 }, pino({ level: 'silent' }));
}

const bootKnown = currentBootId() !== null && currentMachineId() !== null;

describe('the dataset lock and reboots (boot id of the holder)', () => {
  it.skipIf(!bootKnown)('a lock from another boot of this machine is taken over at once, though its pid is alive and its lease runs', async () => {
    leftBy('00000000-0000-4000-8000-000000000000');
    const ran = await command().run('shop-1', 'sync', undefined, async () => db.locks.get('shop-1'));
    expect(ran).toMatchObject({ label: 'a dataset-connector sync command', pid: process.pid, bootId: currentBootId() });
    expect(db.locks.get('shop-1')).toBeNull(); // released after
  });

  it.skipIf(!bootKnown)('a live holder of this boot is still respected until its lease ends', async () => {
    leftBy(currentBootId());
    const err = await command()
      .run('shop-1', 'sync', undefined, async () => 'ran')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatasetBusyError);
    expect((err as DatasetBusyError).message).toBe(`the daemon (pid ${process.pid}) is working on shop-1; try again`);
    expect(db.locks.get('shop-1')).toMatchObject({ ownerId: 'the-other-one' });
  });

  it('a holder whose boot is not known (an older row, or /proc unreadable) or on another host is left to the pid check and the lease', async () => {
    leftBy(null);
    await expect(command().run('shop-1', 'sync', undefined, async () => 'ran')).rejects.toBeInstanceOf(DatasetBusyError);
    db.conn.exec('DELETE FROM locks');
    leftBy('00000000-0000-4000-8000-000000000000', 'another-host', '0123456789abcdef0123456789abcdef');
    await expect(command().run('shop-1', 'sync', undefined, async () => 'ran')).rejects.toBeInstanceOf(DatasetBusyError);
  });
});

describe('the dataset lock and machines sharing a hostname (machine id of the holder)', () => {
  const OTHER_MACHINE = '0123456789abcdef0123456789abcdef';
  const OTHER_BOOT = '00000000-0000-4000-8000-000000000000';

  it('the lock is recorded with this machine\'s id (/etc/machine-id, else /var/lib/dbus/machine-id)', async () => {
    const held = await command().run('shop-1', 'sync', undefined, async () => db.locks.get('shop-1'));
    expect(held?.machineId).toBe(currentMachineId());
  });

  it.skipIf(!bootKnown)('another machine with this hostname (a cloned VM, a Pi on the default name) keeps its lock until its lease ends, though its boot id differs', async () => {
    leftBy(OTHER_BOOT, hostname(), OTHER_MACHINE);
    const err = await command()
      .run('shop-1', 'sync', undefined, async () => 'ran')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DatasetBusyError);
    expect((err as DatasetBusyError).message).toBe(`the daemon (pid ${process.pid} on another machine named ${hostname()}) is working on shop-1; try again`);
    expect(db.locks.get('shop-1')).toMatchObject({ ownerId: 'the-other-one', machineId: OTHER_MACHINE });
  });

  it.skipIf(!bootKnown)('a holder of another machine with this hostname whose pid is not running here is not taken for dead either', async () => {
    const dead = spawnSync(process.execPath, ['-e', '0']).pid!;
    leftBy(null, hostname(), OTHER_MACHINE);
    db.conn.prepare('UPDATE locks SET pid = ?').run(dead);
    await expect(command().run('shop-1', 'sync', undefined, async () => 'ran')).rejects.toBeInstanceOf(DatasetBusyError);
  });

  it('a holder whose machine is not known (a row from before machine ids, or none readable) is left to its lease, whatever its hostname, boot or pid', async () => {
    leftBy(OTHER_BOOT, hostname(), null);
    await expect(command().run('shop-1', 'sync', undefined, async () => 'ran')).rejects.toBeInstanceOf(DatasetBusyError);
    db.conn.prepare('UPDATE locks SET expires_at = ?').run(Date.now() - 1); // the lease ran out
    expect(await command().run('shop-1', 'sync', undefined, async () => 'ran')).toBe('ran');
  });

  it.skipIf(!bootKnown)('this machine under another hostname (renamed since) is still this machine: a lock from an earlier boot is taken over at once', async () => {
    leftBy(OTHER_BOOT, 'old-name');
    expect(await command().run('shop-1', 'sync', undefined, async () => 'ran')).toBe('ran');
  });
});
