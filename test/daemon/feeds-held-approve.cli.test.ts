import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { runCli } from '../sync/cli-child.js';
import { chain, headOffice } from './fan-out-helpers.js';
import { capture, daemonFixture, drop, events, ManualClock, serviceScenario, until, waitEvent } from './service-harness.js';

/**
 * Review of #13 (rv13b, D7): a stock file that waits because the catalogue feed's change is held for a person
 * (HELD_OTHER_FEED) is retried only by a 15-minute back-off (retry_in_ms 900000) once that person ran `approve`
 * (or `discard`) from the CLI: the daemon notices a CLI pause/resume at once, but not an approve, so the shop's stock
 * (and every newer stock file of that dataset, fanned out or not) stays stale for up to 15 minutes after the person
 * acted. README: "that file waits (HELD_OTHER_FEED) until approve or discard".
 */
describe('daemon: a file waiting for another feed\'s held change goes once the change is approved from the CLI', () => {
  const fx = daemonFixture();

  it('the held catalogue approved with the CLI: the waiting stock file is taken without waiting for the back-off', async () => {
    const s = await serviceScenario(fx.emu, 'held-other-feed');
    const dirs = { main: join(s.inbox, 'main'), stock: join(s.inbox, 'stock') };
    for (const d of Object.values(dirs)) await mkdir(d);
    const watch = (path: string) => ({ path, include: ['*.csv'], settle_ms: 100, poll_interval_ms: 30 });
    await s.writeConfig({
      shop: {
        api: s.dataset().api,
        policy: { staging: true, guards: { max_delete_ratio: 0.4 } },
        feeds: {
          main: { role: 'full', source: { type: 'csv' }, mapping: { fields: { record_id: 'sku', display_name: 'name', api_value: 'code' } }, watch: watch(dirs.main) },
          stock: { role: 'update', source: { type: 'csv' }, mapping: { fields: { record_id: 'sku', 'attributes.stock': { column: 'qty', transforms: ['integer'] } } }, watch: watch(dirs.stock) },
        },
      },
    });
    const log = capture();
    // The ManualClock never fires the back-off timer by itself: only an approve the daemon notices takes the file.
    const timers = new ManualClock();
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: timers });
    fx.services.push(service);

    await drop(dirs.main, 'catalogue-1.csv', 'sku,name,code\nP-1,Apple,C1\nP-2,Pear,C2\nP-3,Plum,C3\nP-4,Fig,C4\n');
    await waitEvent(log.lines, 'file.processed', { file: join(dirs.main, 'catalogue-1.csv') });
    // Three of four records gone: held for a person.
    await drop(dirs.main, 'catalogue-2.csv', 'sku,name,code\nP-1,Apple,C1\n');
    await waitEvent(log.lines, 'sync.summary', { result: 'held' });
    await drop(dirs.stock, 'stock-1.csv', 'sku,qty\nP-1,7\n');
    await waitEvent(log.lines, 'sync.summary', { code: 'HELD_OTHER_FEED' });
    expect((await waitEvent(log.lines, 'sync.retry_scheduled', { file: join(dirs.stock, 'stock-1.csv') })).retry_in_ms).toBe(900_000);
    // Still held: the look at the state db finds nothing to do, and looks again.
    expect(timers.fire('held')).toBe(1);
    expect(timers.labels()).toContain('held');

    const approved = await runCli(['--config', s.configPath, 'approve', 'shop', '--yes'], s.env as Record<string, string>);
    expect(approved.status, approved.stderr).toBe(0);
    // Noticed as a resume is: at the next look at the state db, and the back-off is dropped (the file runs once).
    expect(timers.fire('held')).toBe(1);
    expect(await waitEvent(log.lines, 'sync.retry_now', { file: join(dirs.stock, 'stock-1.csv') })).toMatchObject({ reason: 'held_resolved' });
    expect(timers.labels()).not.toContain('retry');
    await waitEvent(log.lines, 'file.processed', { file: join(dirs.stock, 'stock-1.csv') });
    // Taken once after the approve: the back-off it no longer waits for never runs it again.
    expect(events(log.lines, 'sync.summary', { file: join(dirs.stock, 'stock-1.csv') }).map((e) => e.result)).toEqual(['waiting', 'published']);
    expect(fx.emu.emulator.records('held-other-feed')).toEqual([expect.objectContaining({ record_id: 'P-1', attributes: { stock: 7 } })]);
  });

  it('a shared export\'s stock file kept for stores whose catalogue is held: the store approved from the CLI takes it at once, the others keep waiting', async () => {
    const c = await chain(fx.emu, 'held-fan', undefined, 'update');
    const once = await Service.start({ configPath: c.configPath, logger: capture().logger, env: c.env, clock: new ManualClock(), once: true });
    await once.idle();
    await once.stop();
    const log = capture();
    const timers = new ManualClock();
    const service = await Service.start({ configPath: c.configPath, logger: log.logger, env: c.env, clock: timers });
    fx.services.push(service);
    // A catalogue that drops most records of every store: held for a person in each.
    await drop(join(c.dir, 'cat'), 'cat-2.csv', 'SKU,Name,Store\nA1,Apple,001\n');
    await waitEvent(log.lines, 'sync.summary', { result: 'held' }, 3);
    await drop(c.inbox, 'stock-1.csv', headOffice(() => 5));
    await waitEvent(log.lines, 'sync.summary', { code: 'HELD_OTHER_FEED' }, 3);
    await waitEvent(log.lines, 'sync.retry_scheduled', { file: join(c.inbox, 'stock-1.csv') }, 3);
    expect(timers.labels().filter((l) => l === 'held')).toHaveLength(3);

    const approved = await runCli(['--config', c.configPath, 'approve', 'store-001', '--yes'], c.env as Record<string, string>);
    expect(approved.status, approved.stderr).toBe(0);
    expect(timers.fire('held')).toBe(3);
    expect(await waitEvent(log.lines, 'sync.retry_now', { file: join(c.inbox, 'stock-1.csv') })).toMatchObject({ dataset: 'store-001', reason: 'held_resolved' });
    await until(() => c.stocks(0).A1 === 5, 'store-001 took stock-1', log.lines);
    expect(c.stocks(0)).toEqual({ A1: 5 });
    // The two stores still held look again; the file stays in the folder for them.
    expect(timers.labels().filter((l) => l === 'held')).toHaveLength(2);
    expect(events(log.lines, 'sync.retry_now')).toHaveLength(1);
    expect(await readdir(c.inbox)).toContain('stock-1.csv');
    await waitEvent(log.lines, 'sync.summary', { dataset: 'store-001', file: join(c.inbox, 'stock-1.csv'), result: 'published' });
    expect(events(log.lines, 'sync.summary', { dataset: 'store-001', file: join(c.inbox, 'stock-1.csv') }).map((e) => e.result)).toEqual(['waiting', 'published']);
  });
});
