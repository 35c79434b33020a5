import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { loadConfig } from '../../src/config/load.js';
import { openStateDb } from '../../src/snapshot/db.js';
import { datasetStatus } from '../../src/sync/status.js';
import { feedFilesNow } from '../../src/cli/commands/status.js';
import { whereaboutsText } from '../../src/files/whereabouts.js';
import { capture, daemonFixture, drop, ManualClock, serviceScenario, waitEvent } from './service-harness.js';

/**
 * Issue 13 review: `status` shows each feed's last file where it is now. The
 * daemon moved it to processed/ (after: move) or deleted it (after: delete):
 * status names the archived copy (found by its content), or says it was deleted.
 */

describe('status: a feed\'s last file where it is now', () => {
  const fx = daemonFixture();

  it('after: move: the archived copy in processed/; after: delete: said deleted; pruned: where it was looked for', async () => {
    const id = 'feeds-status';
    const s = await serviceScenario(fx.emu, id);
    const dirs = { main: join(s.inbox, 'main'), stock: join(s.inbox, 'stock'), prices: join(s.inbox, 'prices') };
    for (const d of Object.values(dirs)) await mkdir(d);
    const watch = (path: string, after = 'move') => ({ path, include: ['*.csv'], settle_ms: 100, poll_interval_ms: 30, after });
    await s.writeConfig({
      [id]: {
        api: s.dataset().api,
        feeds: {
          main: { role: 'full', source: { type: 'csv' }, mapping: { fields: { record_id: 'sku', display_name: 'name', api_value: 'sku' } }, watch: watch(dirs.main) },
          stock: { role: 'update', source: { type: 'csv' }, mapping: { fields: { record_id: 'sku', 'attributes.stock': { column: 'qty', transforms: ['integer'] } } }, watch: watch(dirs.stock) },
          prices: { role: 'update', source: { type: 'csv' }, mapping: { fields: { record_id: 'sku', 'attributes.price': { column: 'price', transforms: ['integer'] } } }, watch: watch(dirs.prices, 'delete') },
        },
      },
    });
    const log = capture();
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: new ManualClock() });
    fx.services.push(service);
    for (const [dir, name, text] of [
      [dirs.main, 'catalogue.csv', 'sku,name\nP-1,Apple\nP-2,Pear\n'],
      [dirs.stock, 'stock-1.csv', 'sku,qty\nP-1,3\n'],
      [dirs.prices, 'prices-1.csv', 'sku,price\nP-2,120\n'],
    ] as const) {
      await drop(dir, name, text);
      await waitEvent(log.lines, 'file.processed', { file: join(dir, name) });
      await service.idle();
    }
    const config = await loadConfig(s.configPath);
    const db = openStateDb(join(s.dir, 'state', 'state.db'));
    try {
      const ds = config.datasets[id]!;
      const now = await feedFilesNow(config, ds, datasetStatus(db, id, Date.now()).feeds);
      const of = (feed: string) => now.find((f) => f.feed === feed)!;
      const [archived] = await readdir(join(dirs.stock, 'processed'));
      expect(of('stock').whereNow).toEqual({ now: join(dirs.stock, 'processed', archived!), how: 'archived' });
      expect(whereaboutsText(of('stock').file!, of('stock').whereNow!)).toBe(`stock-1.csv, now ${join(dirs.stock, 'processed', archived!)} (moved there after its sync)`);
      expect(of('prices').whereNow).toEqual({ now: null, how: 'deleted' });
      expect(whereaboutsText(of('prices').file!, of('prices').whereNow!)).toMatch(/prices-1\.csv \(deleted after its sync: after: delete\)$/);
      // Pruned (or moved by hand): status says where it looked.
      await rm(join(dirs.stock, 'processed'), { recursive: true });
      const gone = (await feedFilesNow(config, ds, datasetStatus(db, id, Date.now()).feeds)).find((f) => f.feed === 'stock')!;
      expect(gone.whereNow).toEqual({ now: null, how: 'not_found', lookIn: join(dirs.stock, 'processed') });
      expect(whereaboutsText(gone.file!, gone.whereNow!)).toMatch(/stock-1\.csv \(no longer there, nor in processed: pruned by retention_days or moved by hand\)$/);
    } finally {
      db.close();
    }
  });
});
