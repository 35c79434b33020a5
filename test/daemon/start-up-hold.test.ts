import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { holdForStartUp, releaseStartUpHold, startUpHeld } from '../../src/start-up-hold.js';
import { capture, daemonFixture, drop, exportCsv, serviceScenario, waitEvent } from './service-harness.js';

// Issue 18: the CLI holds V8's young-generation growth and optimizing compiler off while the daemon starts
// (src/cli/main.ts); the service gives them back once started, before its syncs need them.
describe('daemon: the start-up hold', () => {
  const fx = daemonFixture();

  it('is released once the service has started, and a sync runs after it', async () => {
    const s = await serviceScenario(fx.emu, 'start-up-hold');
    await s.writeConfig({ shop: s.dataset() });
    const log = capture();
    holdForStartUp();
    try {
      expect(startUpHeld()).toEqual(['semi-space-growth-factor', 'turbofan']);
      fx.services.push(await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env }));
      expect(startUpHeld()).toEqual([]);
    } finally {
      releaseStartUpHold();
    }
    await drop(s.inbox, 'stock.csv', exportCsv(3));
    await waitEvent(log.lines, 'sync.summary', { result: 'published' });
  });

  it('is released by a start that fails, so that nothing stays held in the process', async () => {
    const s = await serviceScenario(fx.emu, 'start-up-hold-bad');
    await s.writeConfig({ shop: s.dataset() }, { health: { listen: 'not-an-address' } });
    holdForStartUp();
    try {
      await expect(Service.start({ configPath: s.configPath, logger: capture().logger, env: s.env })).rejects.toThrow();
      expect(startUpHeld()).toEqual([]);
    } finally {
      releaseStartUpHold();
    }
  });
});
