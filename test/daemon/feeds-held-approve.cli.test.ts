import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { runCli } from '../sync/cli-child.js';
import { capture, daemonFixture, drop, ManualClock, serviceScenario, waitEvent } from './service-harness.js';

/**
 * Review of #13 (rv13b, D7): a stock file that waits because the catalogue feed's change is held for a person
 * (HELD_OTHER_FEED) is retried only by a 15-minute back-off (retry_in_ms 900000) once that person ran `approve`
 * (or `discard`) from the CLI: the daemon notices a CLI pause/resume at once, but not an approve, so the shop's stock
 * (and every newer stock file of that dataset, fanned out or not) stays stale for up to 15 minutes after the person
 * acted. README: "that file waits (HELD_OTHER_FEED) until approve or discard".
 */
describe('daemon: a file waiting for another feed\'s held change goes once the change is approved from the CLI', () => {
  const fx = daemonFixture();

  it.fails('the held catalogue approved with the CLI: the waiting stock file is taken without waiting for the back-off', async () => {
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
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: new ManualClock() });
    fx.services.push(service);

    await drop(dirs.main, 'catalogue-1.csv', 'sku,name,code\nP-1,Apple,C1\nP-2,Pear,C2\nP-3,Plum,C3\nP-4,Fig,C4\n');
    await waitEvent(log.lines, 'file.processed', { file: join(dirs.main, 'catalogue-1.csv') });
    // Three of four records gone: held for a person.
    await drop(dirs.main, 'catalogue-2.csv', 'sku,name,code\nP-1,Apple,C1\n');
    await waitEvent(log.lines, 'sync.summary', { result: 'held' });
    await drop(dirs.stock, 'stock-1.csv', 'sku,qty\nP-1,7\n');
    await waitEvent(log.lines, 'sync.summary', { code: 'HELD_OTHER_FEED' });

    const approved = await runCli(['--config', s.configPath, 'approve', 'shop', '--yes'], s.env as Record<string, string>);
    expect(approved.status, approved.stderr).toBe(0);
    await waitEvent(log.lines, 'file.processed', { file: join(dirs.stock, 'stock-1.csv') });
    expect(fx.emu.emulator.records('held-other-feed')).toEqual([expect.objectContaining({ record_id: 'P-1', attributes: { stock: 7 } })]);
  });
});
