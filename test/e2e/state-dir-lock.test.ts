import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { STATE_DIR_LOCK } from '../../src/daemon/state-dir-lock.js';
import { openStateDb } from '../../src/snapshot/db.js';
import { currentBootId, currentMachineId } from '../../src/snapshot/locks.js';
import { runCli } from '../sync/cli-child.js';
import { emulatorFixture, exportCsv, scenario } from './harness.js';

/**
 * One daemon per state_dir (issue 11, point 8): a second `run` on the same
 * state_dir exits at once with 75, naming the daemon that has it; a holder
 * that is gone (killed, a reboot) does not block a restart; the CLI commands
 * keep working beside a running daemon. Real child processes.
 */

const machineKnown = currentMachineId() !== null && currentBootId() !== null;

describe('one daemon per state_dir', () => {
  const fx = emulatorFixture();

  it('a second run exits 75 at once naming the first; sync works beside it; after a SIGKILL the next run starts', async () => {
    const s = await scenario(fx.emu, 'one-daemon');
    await s.writeConfig({ shop: s.dataset() });
    const env = s.env as Record<string, string>;
    const first = s.start();
    let third: ReturnType<typeof s.start> | undefined;
    try {
      await first.waitFor('daemon.started');
      const before = fx.emu.emulator.requests.length;

      const second = await runCli(['run', '--config', s.configPath], env, 30_000);
      expect(second.status, second.stdout + second.stderr).toBe(75);
      expect(second.stderr).toContain(`error [STATE_DIR_BUSY]`);
      expect(second.stderr).toContain(`state_dir ${join(s.dir, 'state')} is served by another dataset-connector daemon: pid ${first.child.pid} on this machine (host ${hostname()}), since 20`);
      expect(second.stderr).not.toContain('the connector will try again'); // the hint says what to do here
      expect(second.stderr).toMatch(/stop that daemon first/);
      expect(second.stdout).not.toContain('daemon.started');
      expect(fx.emu.emulator.requests.length).toBe(before); // it sent nothing

      // A command beside the running daemon works as before (it takes the dataset lock, not the state_dir's).
      const file = join(s.dir, 'by-hand.csv');
      await writeFile(file, exportCsv(4));
      const sync = await runCli(['sync', 'shop', '--file', file, '--config', s.configPath], env);
      expect(sync.status, sync.stderr).toBe(0);
      expect(fx.emu.emulator.records('one-daemon')).toHaveLength(4);

      // Killed without a chance to give the state_dir back: the next run starts at once (its pid is gone).
      // Without a machine id only the one-minute lease tells this machine's claims from another's (snapshot/locks.ts).
      if (currentMachineId() === null) return;
      first.child.kill('SIGKILL');
      await first.exited;
      third = s.start();
      await third.waitFor('daemon.started');
      expect(await third.stop()).toBe(0);
      third = undefined;
      const db = openStateDb(join(s.dir, 'state', 'state.db'));
      expect(db.locks.get(STATE_DIR_LOCK)).toBeNull(); // given back at stop
      db.close();
    } finally {
      await first.stop();
      await third?.stop();
    }
  });

  it.skipIf(!machineKnown)('a claim left from another boot of this machine does not block; one of another machine does, until its lease ends', async () => {
    const s = await scenario(fx.emu, 'one-daemon-boot');
    await s.writeConfig({ shop: s.dataset() });
    const env = s.env as Record<string, string>;
    const db = openStateDb(join(s.dir, 'state', 'state.db'));
    const claim = (machineId: string, bootId: string, expiresAt: number) =>
      db.conn
        .prepare(
          `INSERT OR REPLACE INTO locks (dataset, owner_id, pid, host, machine_id, boot_id, label, purpose, acquired_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, 'the daemon', 'serve', ?, ?)`,
        )
        .run(STATE_DIR_LOCK, randomUUID(), process.pid, 'shop-srv', machineId, bootId, Date.UTC(2025, 0, 6, 9), expiresAt);
    try {
      // Another machine sharing the folder (NFS): its live lease is respected, and the message says where it runs.
      claim('0123456789abcdef0123456789abcdef', 'another-boot', Date.now() + 3_600_000);
      const blocked = await runCli(['run', '--config', s.configPath], env, 30_000);
      expect(blocked.status, blocked.stdout + blocked.stderr).toBe(75);
      expect(blocked.stderr).toContain('pid ' + process.pid + ' on another machine (host shop-srv, machine id 01234567…), since 2025-01-06T09:00:00.000Z');

      // This machine before a reboot: the pid (alive now: this test) belongs to another process since; the claim is stale.
      claim(currentMachineId()!, 'a-boot-before-this-one', Date.now() + 3_600_000);
      const d = s.start();
      try {
        await d.waitFor('daemon.started');
        expect(db.locks.get(STATE_DIR_LOCK)).toMatchObject({ pid: d.child.pid, bootId: currentBootId() });
      } finally {
        expect(await d.stop()).toBe(0);
      }
    } finally {
      db.close();
    }
  });
});
