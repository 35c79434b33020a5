import { mkdir, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { Service } from '../../src/daemon/service.js';
import { openStateDb } from '../../src/snapshot/db.js';
import { capture, daemonFixture, drop, events, ManualClock, until, waitEvent } from './service-harness.js';

// Review of #13 (rv13). An update feed's own folder keeps every waiting file (none is superseded: each lists
// other records), but a shared export (exports:) supersedes an older waiting file by a newer one for every
// taker, update feeds too. A stock file listing A1 and A2 followed by one listing only A1 loses A2's new
// stock: the dataset publishes a stale value for A2 for good. The same happens to a dataset that was paused
// or had to retry while the others took the older file (seen by hand: the paused store never got it).
// Fixed: an export's update/changes takers take every waiting file, oldest first (a newer file waits
// behind one kept for a retry).

/** Store 001 with its catalogue published (run --once), taking export ho's stock rows as an update feed. */
async function storeWithStock(fx: ReturnType<typeof daemonFixture>, id: string, role: 'update' | 'changes' = 'update') {
  const dir = await mkdtemp(join(tmpdir(), 'dc-rv13-'));
  const cat = join(dir, 'cat');
  const ho = join(dir, 'ho');
  await mkdir(cat);
  await mkdir(ho);
  fx.emu.emulator.addDataset({ id });
  const env: NodeJS.ProcessEnv = { KEY_1: fx.emu.emulator.addKey({ dataset: id }) };
  const config = {
    state_dir: join(dir, 'state'),
    timezone: 'UTC',
    exports: { ho: { watch: { path: ho, include: ['stock-*.csv'], settle_ms: 100, poll_interval_ms: 30, after: 'move' }, source: { type: 'csv' } } },
    datasets: {
      'store-001': {
        api: { base_url: fx.emu.url, dataset_id: id, key: { env: 'KEY_1' }, retry: { max_attempts: 2, base_delay_ms: 10, max_delay_ms: 20 } },
        policy: { staging: false, guards: { values: [] } },
        feeds: {
          main: { role: 'full', source: { type: 'csv' }, mapping: { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'SKU' } }, watch: { path: cat, include: ['*.csv'], settle_ms: 100, poll_interval_ms: 30, after: 'move' } },
          stock: { role, from: 'ho', rows: { column: 'Store', equals: '001' }, mapping: { fields: { record_id: 'SKU', 'attributes.stock': { column: 'Qty', transforms: [{ integer: {} }] } } }, ...(role === 'changes' ? { commands: { column: 'op' } } : {}) },
        },
      },
    },
  };
  const configPath = join(dir, 'connector.yaml');
  await writeFile(configPath, stringify(config));
  const stocks = () => Object.fromEntries(fx.emu.emulator.records(id).map((r) => [r.record_id, (r.attributes as { stock?: number }).stock]));
  await drop(cat, 'cat.csv', 'SKU,Name\nA1,Apple\nA2,Pear\nA3,Fig\nA4,Kiwi\nA5,Plum\n');
  const first = await Service.start({ configPath, logger: capture().logger, env, clock: new ManualClock(), once: true });
  await first.idle();
  await first.stop();
  return { ho, configPath, env, stocks, stateDb: join(dir, 'state', 'state.db') };
}

describe('daemon: an export taken by an update feed (review of issue 13)', () => {
  const fx = daemonFixture();

  it('run --once with two stock files waiting applies both, oldest first: nothing the older one said of other records is lost', async () => {
    const { ho, configPath, env, stocks } = await storeWithStock(fx, 'rv13-store-1');
    expect(stocks()).toEqual({ A1: undefined, A2: undefined, A3: undefined, A4: undefined, A5: undefined });

    const t0 = Date.now() - 60_000;
    await drop(ho, 'stock-1.csv', 'SKU,Store,Qty\nA1,001,5\nA2,001,6\n', t0);
    await drop(ho, 'stock-2.csv', 'SKU,Store,Qty\nA1,001,7\n', t0 + 1_000);
    const second = await Service.start({ configPath, logger: capture().logger, env, clock: new ManualClock(), once: true });
    await second.idle();
    await second.stop();
    expect(stocks()).toMatchObject({ A1: 7, A2: 6 });
  });

  it('a newer stock file arriving while the older one waits for its retry waits behind it (not superseded); both are applied, oldest first', async () => {
    const id = 'rv13-store-2';
    const { ho, configPath, env, stocks } = await storeWithStock(fx, id);
    const log = capture();
    const timers = new ManualClock();
    const service = await Service.start({ configPath, logger: log.logger, env, clock: timers });
    fx.services.push(service);

    fx.emu.emulator.faults.add({ path: new RegExp(id), status: 503, count: Infinity });
    await drop(ho, 'stock-1.csv', 'SKU,Store,Qty\nA1,001,5\nA2,001,6\n', Date.now() - 2_000);
    await waitEvent(log.lines, 'sync.retry_scheduled');
    await drop(ho, 'stock-2.csv', 'SKU,Store,Qty\nA1,001,7\n');
    const held = await waitEvent(log.lines, 'file.kept', { reason: 'older_file_retrying' });
    expect(held.file).toBe(join(ho, 'stock-2.csv'));
    expect(events(log.lines, 'file.archived', { reason: 'superseded' })).toEqual([]);
    expect((await readdir(ho)).sort()).toEqual(['stock-1.csv', 'stock-2.csv']);

    fx.emu.emulator.faults.clear();
    expect(timers.fire('retry')).toBe(1);
    await until(async () => (await readdir(ho)).join() === 'processed', 'both archived', log.lines);
    expect(events(log.lines, 'file.processed', { export: 'ho' }).map((e) => e.file)).toEqual([join(ho, 'stock-1.csv'), join(ho, 'stock-2.csv')]);
    expect(stocks()).toMatchObject({ A1: 7, A2: 6 });
  });

  it('a kept file waiting for a paused dataset is taken at its resume, not after the retry back-off', async () => {
    const { ho, configPath, env, stocks, stateDb } = await storeWithStock(fx, 'rv13-store-3');
    const log = capture();
    const timers = new ManualClock();
    const service = await Service.start({ configPath, logger: log.logger, env, clock: timers });
    fx.services.push(service);
    // The CLI's pause and resume write the state db; the daemon holds its own connection to it.
    const cli = openStateDb(stateDb);
    try {
      cli.snapshot('store-001').pause({ at: Date.now(), by: 'test' });
      await drop(ho, 'stock-1.csv', 'SKU,Store,Qty\nA1,001,5\nA2,001,6\n');
      await waitEvent(log.lines, 'file.kept', { export: 'ho' });
      await waitEvent(log.lines, 'sync.retry_scheduled');
      cli.snapshot('store-001').unpause();
      // The look at the state db for the resume, not the retry timer, takes the file.
      expect(timers.fire('pause')).toBe(1);
      await waitEvent(log.lines, 'file.processed', { export: 'ho' });
      expect(stocks()).toMatchObject({ A1: 5, A2: 6 });
      expect(events(log.lines, 'sync.retry_now')[0]).toMatchObject({ reason: 'resumed' });
    } finally {
      cli.close();
    }
  });

  it('run --once with two change lists waiting applies both, oldest first (a change list is never superseded)', async () => {
    const { ho, configPath, env, stocks } = await storeWithStock(fx, 'rv13-store-4', 'changes');
    const t0 = Date.now() - 60_000;
    await drop(ho, 'stock-1.csv', 'SKU,Store,Qty,op\nA1,001,5,update\nA2,001,6,update\n', t0);
    await drop(ho, 'stock-2.csv', 'SKU,Store,Qty,op\nA1,001,7,update\nA3,001,0,delete\n', t0 + 1_000);
    const run = await Service.start({ configPath, logger: capture().logger, env, clock: new ManualClock(), once: true });
    await run.idle();
    await run.stop();
    expect(stocks()).toEqual({ A1: 7, A2: 6, A4: undefined, A5: undefined });
  });
});
