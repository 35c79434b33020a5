import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { capture, daemonFixture, drop, exportCsv, freePort, healthz, ManualClock, serviceScenario, waitEvent } from './service-harness.js';

// "API unreachable" names the address, the errno and the setting to check.
describe('daemon: an API that cannot be reached', () => {
  const fx = daemonFixture();

  it('the failed sync and /healthz say which address, which errno and which setting', async () => {
    const s = await serviceScenario(fx.emu, 'unreachable');
    const closed = `http://127.0.0.1:${await freePort()}`;
    const ds = s.dataset();
    const port = await freePort();
    await s.writeConfig(
      { shop: { ...ds, api: { ...(ds.api as Record<string, unknown>), base_url: closed } } },
      { health: { listen: `127.0.0.1:${port}` } },
    );
    const log = capture();
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: new ManualClock() });
    try {
      await drop(s.inbox, 'stock.csv', exportCsv(2));
      const summary = await waitEvent(log.lines, 'sync.summary');
      expect(summary.code).toBe('NETWORK_ERROR');
      for (const part of [closed, 'ECONNREFUSED', 'api.base_url']) expect(String(summary.message)).toContain(part);
      const h = await healthz(port);
      expect(h).toMatchObject({ status: 'degraded', reasons: [{ topic: 'sync', code: 'NETWORK_ERROR', message: expect.stringContaining(closed) }] });
      expect(String((h.reasons as Array<{ message: string }>)[0]!.message)).toContain('ECONNREFUSED');
    } finally {
      await service.stop();
    }
  });
});
