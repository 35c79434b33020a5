import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { capture, daemonFixture, drop, events, exportCsv, ManualClock, serviceScenario, until, waitEvent } from './service-harness.js';

// An older export must never be published over a newer one,
// whether through a pending retry or a late file with an older modification time.
describe('daemon: newer exports win over retries of older ones', () => {
  const fx = daemonFixture();
  const services = fx.services;
  afterEach(() => fx.emu.emulator.faults.clear());

  const stockOf = (datasetId: string) =>
    new Set(fx.emu.emulator.records(datasetId).map((r) => (r.attributes as { stock?: number } | undefined)?.stock));

  it('a newer file published while an older one waits for its retry: the retry is dropped and the older file archived as superseded', async () => {
    const s = await serviceScenario(fx.emu, 'retry-order');
    await s.writeConfig({ shop: s.dataset() });
    const log = capture();
    const timers = new ManualClock();
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: timers });
    services.push(service);

    const t0 = Date.now() - 60_000;
    fx.emu.emulator.faults.add({ path: /retry-order/, status: 503, count: Infinity });
    await drop(s.inbox, 'a.csv', exportCsv(5, 44), t0);
    await waitEvent(log.lines, 'sync.retry_scheduled');
    expect(timers.labels()).toContain('retry');

    fx.emu.emulator.faults.clear();
    await drop(s.inbox, 'b.csv', exportCsv(5, 45), t0 + 10_000);
    await waitEvent(log.lines, 'sync.summary', { result: 'published' });
    await waitEvent(log.lines, 'file.processed');
    // b.csv replaced the retry of a.csv; firing any retry timer left must not bring a.csv back.
    expect(timers.labels()).not.toContain('retry');
    expect(timers.fire('retry')).toBe(0);
    await service.datasets.idle();
    expect(stockOf('retry-order')).toEqual(new Set([45]));
    expect(events(log.lines, 'sync.summary', { result: 'published' })).toHaveLength(1);
    const processed = await readdir(join(s.inbox, 'processed'));
    expect(processed.some((n) => /^a\.\d{8}-\d{6}\.superseded\.csv$/.test(n))).toBe(true);
    expect(processed.some((n) => /^b\.\d{8}-\d{6}\.csv$/.test(n))).toBe(true);
    expect(await readdir(s.inbox)).toEqual(['processed']);
  });

  it('a file older than the last one processed is not synced: it is archived as superseded', async () => {
    const s = await serviceScenario(fx.emu, 'older-file');
    await s.writeConfig({ shop: s.dataset() });
    const log = capture();
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: new ManualClock() });
    services.push(service);
    const t0 = Date.now() - 60_000;
    await drop(s.inbox, 'new.csv', exportCsv(4, 7), t0);
    await waitEvent(log.lines, 'file.processed');

    await drop(s.inbox, 'old.csv', exportCsv(4, 6), t0 - 3_600_000);
    const skipped = await waitEvent(log.lines, 'file.skipped', { reason: 'older_than_last' });
    expect(skipped.file).toBe(join(s.inbox, 'old.csv'));
    await until(async () => (await readdir(s.inbox)).length === 1, 'old.csv archived', log.lines);
    await service.datasets.idle();
    expect(stockOf('older-file')).toEqual(new Set([7]));
    expect(events(log.lines, 'sync.summary')).toHaveLength(1);
    const processed = await readdir(join(s.inbox, 'processed'));
    expect(processed.some((n) => /^old\.\d{8}-\d{6}\.superseded\.csv$/.test(n))).toBe(true);
  });
});
