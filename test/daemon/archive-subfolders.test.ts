import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { capture, daemonFixture, drop, exportCsv, ManualClock, serviceScenario, waitEvent } from './service-harness.js';

// A daemon on a fresh folder makes processed/ and failed/ itself, under a
// watcher that is already running: the exports after them must still be seen,
// with file-system events and with polling (SMB, NFS). Nothing inside those
// folders is read as an export (sub-folders are not watched).
describe('daemon: archive folders made after the watch started', () => {
  const fx = daemonFixture();

  for (const polling of [false, true]) {
    it(`${polling ? 'polling' : 'fs events'}: exports after the first move to processed/ and failed/ are synced`, async () => {
      const id = `archive-dirs-${polling ? 'poll' : 'events'}`;
      const s = await serviceScenario(fx.emu, id);
      const watch = { path: s.inbox, include: ['*.csv'], settle_ms: 100, poll_interval_ms: 30, polling };
      await s.writeConfig({ shop: s.dataset({ watch }) });
      const log = capture();
      // Manual timers: a watcher restart (watch.restart) would have to be fired by the test, so a
      // sub-folder mistaken for the folder going away fails here instead of recovering unseen.
      const timers = new ManualClock();
      fx.services.push(await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: timers }));
      await waitEvent(log.lines, 'daemon.started');
      expect(await readdir(s.inbox)).toEqual([]);

      const a = await drop(s.inbox, 'a.csv', exportCsv(3));
      await waitEvent(log.lines, 'sync.summary', { result: 'published', rows: 3 });
      await waitEvent(log.lines, 'file.processed', { file: a });
      expect(await readdir(s.inbox)).toEqual(['processed']);

      const b = await drop(s.inbox, 'b.csv', exportCsv(5));
      await waitEvent(log.lines, 'sync.summary', { result: 'published', rows: 5 });
      await waitEvent(log.lines, 'file.processed', { file: b });
      expect(fx.emu.emulator.records(id)).toHaveLength(5);

      await drop(s.inbox, 'bad.csv', exportCsv(6, { stock: (i) => (i === 2 ? 'x' : '1') }));
      await waitEvent(log.lines, 'file.rejected', { fate: 'failed' });
      expect((await readdir(s.inbox)).sort()).toEqual(['failed', 'processed']);

      const c = await drop(s.inbox, 'c.csv', exportCsv(7));
      await waitEvent(log.lines, 'sync.summary', { result: 'published', rows: 7 });
      await waitEvent(log.lines, 'file.processed', { file: c });
      expect(fx.emu.emulator.records(id)).toHaveLength(7);

      expect(log.lines.filter((l) => l.event === 'watch.failed')).toEqual([]);
      expect(timers.labels()).not.toContain('watch.restart');
      // Only the four exports were read: nothing archived in processed/ or failed/ came back.
      expect(log.lines.filter((l) => l.event === 'file.ready').map((l) => l.file)).toEqual(
        ['a.csv', 'b.csv', 'bad.csv', 'c.csv'].map((n) => join(s.inbox, n)),
      );
      expect(await readdir(s.inbox)).toEqual(['failed', 'processed']);
      expect(await readdir(join(s.inbox, 'processed'))).toHaveLength(3);
    });
  }
});
