import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { maxInWindow } from '../../src/emulator/index.js';
import { runCli } from '../sync/cli-child.js';
import { emulatorFixture, exportCsv, scenario } from './harness.js';

/**
 * A24: the server counts every request of a key in a sliding minute, whoever
 * sent it. The daemon and the commands a cron or a person runs beside it are
 * separate processes; they share one window in the state database. Real
 * processes need real time: this test crosses the window once (about 60 s).
 * The emulator's own request log is the judge.
 */

const RATE = 20;

describe('one rate budget per key for every process on the machine (slow: real time)', () => {
  const fx = emulatorFixture();

  it(`the daemon, two cron syncs back to back and a doctor beside them never send more than ${RATE} in any 60 s; no 429`, { timeout: 240_000 }, async () => {
    const emu = fx.emu;
    // The server's limit is the configured rate itself: any overshoot is a 429 in the log.
    emu.emulator.configure({ rateLimitPerMinute: RATE });
    const s = await scenario(emu, 'rate-shared');
    const ds = s.dataset();
    ds.api = { ...(ds.api as object), rate_per_minute: RATE };
    await s.writeConfig({ shop: ds });
    const env = { ...(s.env as Record<string, string>), DATASET_CONNECTOR_LOCK_WAIT_MS: '200000' };
    const cli = (...args: string[]) => runCli(['--config', s.configPath, ...args], env, 200_000);

    const d = s.start();
    try {
      await d.waitFor('daemon.started');
      // The daemon publishes 8 products (a first sync: dataset, records, 8 writes).
      await writeFile(join(s.inbox, 'a.csv'), exportCsv(8));
      expect(await d.waitFor('sync.summary', {}, 1, 60_000)).toMatchObject({ result: 'published', adds: 8 });
      const daemonSent = emu.emulator.requests.length;

      // Right after: cron's sync of a changed export, doctor at the same moment, then cron's next sync.
      const b = join(s.dir, 'b.csv');
      const c = join(s.dir, 'c.csv');
      await writeFile(b, exportCsv(8, 7));
      await writeFile(c, exportCsv(8, 9));
      const [first, doctor] = await Promise.all([cli('sync', 'shop', '--file', b), cli('doctor', '--dataset', 'shop')]);
      const second = await cli('sync', 'shop', '--file', c);
      expect(first.status, first.stderr).toBe(0);
      expect(doctor.status, doctor.stdout + doctor.stderr).toBe(0);
      expect(second.status, second.stderr).toBe(0);
      expect(emu.emulator.records('rate-shared').map((r) => r.attributes.stock)).toEqual(Array(8).fill(9));

      const log = emu.emulator.requests;
      // More than a minute's budget was needed, so the processes had to wait for each other's slots…
      expect(log.length).toBeGreaterThan(RATE);
      expect(daemonSent).toBeGreaterThan(RATE / 4);
      // …and together they kept to it: no window over the rate, no request refused.
      expect(log.filter((r) => r.status === 429)).toEqual([]);
      expect(maxInWindow(log)).toBeLessThanOrEqual(RATE);
    } finally {
      expect(await d.stop()).toBe(0);
    }
  });
});
