import { mkdir, rename, rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { capture, daemonFixture, drop, exportCsv, freePort, healthz, type Line, ManualClock, serviceScenario, until, waitEvent } from './service-harness.js';

// A folder that is missing, removed, replaced or remounted is
// watched again once it is back, and /healthz says so while it is not watched.
describe('daemon: the folder watch recovers', () => {
  const fx = daemonFixture();
  const services = fx.services;

  async function start(datasetId: string, opts: { createInbox?: boolean } = {}) {
    const s = await serviceScenario(fx.emu, datasetId);
    if (opts.createInbox === false) await rm(s.inbox, { recursive: true });
    const port = await freePort();
    await s.writeConfig({ shop: s.dataset() }, { health: { listen: `127.0.0.1:${port}` } });
    const log = capture();
    const timers = new ManualClock();
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: timers });
    services.push(service);
    const published = async (name: string, lines: Line[], n: number) => {
      const file = await drop(s.inbox, name, exportCsv(n));
      await waitEvent(lines, 'sync.summary', { result: 'published', rows: n });
      await waitEvent(lines, 'file.processed', { file });
      expect(fx.emu.emulator.records(datasetId)).toHaveLength(n);
    };
    return { s, log, timers, service, health: () => healthz(port), published };
  }

  it('a folder missing at start-up (share not mounted) is reported, then watched once it appears', async () => {
    const { s, log, timers, health, published } = await start('watch-missing', { createInbox: false });
    expect(await health()).toMatchObject({ status: 'degraded', reasons: [{ topic: 'watch', code: 'WATCH_FAILED' }] });
    expect(log.lines.find((l) => l.event === 'watch.failed')).toMatchObject({ watch: s.inbox, errno: 'ENOENT' });
    // Still missing: the restart fails quietly and waits longer.
    expect(timers.fire('watch.restart')).toBe(1);
    await until(() => timers.labels().includes('watch.restart'), 'the next restart', log.lines);
    await mkdir(s.inbox);
    expect(timers.fire('watch.restart')).toBe(1);
    await waitEvent(log.lines, 'watch.started');
    expect(await health()).toMatchObject({ status: 'ok', reasons: [] });
    await published('stock.csv', log.lines, 3);
  });

  it('SIGHUP with the same config starts a watch that failed', async () => {
    const { s, log, timers, service, health, published } = await start('watch-reload', { createInbox: false });
    expect(await health()).toMatchObject({ status: 'degraded', reasons: [{ topic: 'watch', code: 'WATCH_FAILED' }] });
    await mkdir(s.inbox);
    expect(await service.reload()).toBe(true);
    expect(await health()).toMatchObject({ status: 'ok' });
    expect(timers.labels()).not.toContain('watch.restart');
    await published('stock.csv', log.lines, 4);
  });

  it('a folder removed and made again is watched again, new files are not ignored', async () => {
    const { s, log, timers, health, published } = await start('watch-removed');
    await published('a.csv', log.lines, 2);
    await rm(s.inbox, { recursive: true });
    await waitEvent(log.lines, 'watch.failed', { code: 'WATCH_LOST' });
    expect(await health()).toMatchObject({ status: 'degraded', reasons: [{ topic: 'watch', code: 'WATCH_LOST' }] });
    await mkdir(s.inbox);
    expect(timers.fire('watch.restart')).toBe(1);
    await waitEvent(log.lines, 'watch.started');
    expect(await health()).toMatchObject({ status: 'ok' });
    await published('b.csv', log.lines, 5);
  });

  it('a folder renamed away and replaced by another of the same name is found by the periodic check', async () => {
    const { s, log, timers, health, published } = await start('watch-replaced');
    await published('a.csv', log.lines, 2);
    await rename(s.inbox, `${s.inbox}.old`);
    await mkdir(s.inbox);
    // Whether or not chokidar reported the rename, the check sees another folder under the path.
    timers.fire('watch.check');
    await waitEvent(log.lines, 'watch.failed', { code: 'WATCH_LOST' });
    expect(await health()).toMatchObject({ status: 'degraded', reasons: [{ topic: 'watch' }] });
    expect(timers.fire('watch.restart')).toBe(1);
    await waitEvent(log.lines, 'watch.started');
    await published('b.csv', log.lines, 6);
  });
});
