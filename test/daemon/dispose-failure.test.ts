import { readdir, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { statusOf } from './status-of.js';
import { capture, daemonFixture, drop, exportCsv, freePort, healthz as getHealthz, ManualClock, serviceScenario, waitEvent } from './service-harness.js';

// A file that cannot be moved after its sync is said so (log and
// /healthz), keeps its marker, and its move is tried again.
describe('daemon: a failed move to processed/ is reported and retried', () => {
  const fx = daemonFixture();

  it('a plain file named processed blocks the move: file.dispose_failed, degraded health, marker kept; fixed, the retry moves it', async () => {
    const s = await serviceScenario(fx.emu, 'dispose-fail');
    await writeFile(join(s.inbox, 'processed'), 'not a folder');
    const watch = { path: s.inbox, include: ['*.csv'], settle_ms: 100, poll_interval_ms: 30, marker: '{name}.done' };
    await s.writeConfig({ shop: s.dataset({ watch }) }, { health: { listen: `127.0.0.1:${await freePort()}` } });
    const log = capture();
    const timers = new ManualClock();
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: timers });
    try {
      const healthz = () => getHealthz(service.healthAddress!.port);
      await drop(s.inbox, 's2.csv', exportCsv(3));
      await writeFile(join(s.inbox, 's2.csv.done'), '');
      await waitEvent(log.lines, 'sync.summary', { result: 'published' });
      const failed = await waitEvent(log.lines, 'file.dispose_failed');
      expect(failed).toMatchObject({ file: join(s.inbox, 's2.csv'), fate: 'processed', code: expect.stringMatching(/^E[A-Z]+$/) });
      expect(String(failed.hint)).toContain('ReadWritePaths');
      expect(await healthz()).toMatchObject({
        status: 'degraded',
        reasons: [{ dataset: 'shop', topic: 'dispose', code: 'DISPOSE_FAILED', message: expect.stringContaining(join(s.inbox, 'processed')) }],
      });
      // The export and its marker stay, so the file is not lost to the watcher.
      expect((await readdir(s.inbox)).sort()).toEqual(['processed', 's2.csv', 's2.csv.done']);
      expect(timers.labels()).toContain('retry');
      // `status` (the state db, not /healthz) names the file that stays, why and what to do.
      const stuck = await statusOf(s.configPath, 'shop');
      expect(stuck).toContain(`; feed main: ${join(s.inbox, 's2.csv')} stays in its folder since `);
      expect(stuck).toContain(`(DISPOSE_FAILED): cannot move ${join(s.inbox, 's2.csv')} to ${join(s.inbox, 'processed')} (`);
      expect(stuck).toContain('ReadWritePaths');

      await rm(join(s.inbox, 'processed'));
      timers.fire('retry');
      await waitEvent(log.lines, 'file.processed');
      expect(await statusOf(s.configPath, 'shop')).not.toContain('DISPOSE_FAILED');
      expect(await healthz()).toMatchObject({ status: 'ok', reasons: [] });
      expect(await readdir(s.inbox)).toEqual(['processed']);
      expect((await stat(join(s.inbox, 'processed'))).isDirectory()).toBe(true);
      expect(fx.emu.emulator.counters.recordWrites).toBeGreaterThan(0);
    } finally {
      await service.stop();
    }
  });
});
