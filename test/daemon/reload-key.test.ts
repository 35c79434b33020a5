import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { capture, daemonFixture, drop, events, exportCsv, serviceScenario, waitEvent } from './service-harness.js';

// A key that cannot be read at reload is not reported as a stopped dataset when it keeps running.
describe('daemon: a key unreadable at reload', () => {
  const fx = daemonFixture();

  it('is logged as a key warning; the dataset keeps syncing on its previous key and /healthz says so', async () => {
    const s = await serviceScenario(fx.emu, 'reload-key');
    await s.writeConfig({ shop: s.dataset() });
    const log = capture();
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env });
    try {
      const ds = s.dataset();
      await s.writeConfig({ shop: { ...ds, api: { ...(ds.api as object), key: { env: 'NOT_SET_ANYWHERE' } } } });
      expect(await service.reload()).toBe(true);
      expect(events(log.lines, 'dataset.stopped')).toEqual([]);
      expect(events(log.lines, 'key.warning', { dataset: 'shop' })).toEqual([
        expect.objectContaining({ code: 'KEY_NOT_FOUND', outcome: 'kept_previous_key' }),
      ]);
      expect(service.health.report().reasons).toMatchObject([
        { dataset: 'shop', topic: 'key', code: 'KEY_NOT_FOUND', message: expect.stringContaining('previous') },
      ]);
      await drop(s.inbox, 'stock.csv', exportCsv(2));
      await waitEvent(log.lines, 'sync.summary', { result: 'published' });
      expect(fx.emu.emulator.records('reload-key')).toHaveLength(2);
    } finally {
      await service.stop();
    }
  });
});
