import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { loadConfig } from '../../src/config/load.js';
import { cliEngine } from '../../src/cli/engine.js';
import { feedFilesNow, statusLine, waitingFilesNow } from '../../src/cli/commands/status.js';
import { capture, daemonFixture, drop, events, ManualClock, serviceScenario, until, waitEvent } from './service-harness.js';

/**
 * D7 of issue 13, the status part: a stock file kept in its feed's own folder because the catalogue's change is
 * held for a person (HELD_OTHER_FEED) is in `status`: which file, since when, why and the command that ends the
 * wait. And the sync that stopped there is a sync of the stock feed: /metrics counts it per feed.
 */
describe('status: a feed\'s file waiting behind another feed\'s held change', () => {
  const fx = daemonFixture();

  it('names the file, since when and why with approve/discard; the wait ends with the discard; feed_syncs_total counts it as waiting', async () => {
    const s = await serviceScenario(fx.emu, 'waiting-status');
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
    const timers = new ManualClock();
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: timers });
    fx.services.push(service);
    await drop(dirs.main, 'catalogue-1.csv', 'sku,name,code\nP-1,Apple,C1\nP-2,Pear,C2\nP-3,Plum,C3\nP-4,Fig,C4\n');
    await waitEvent(log.lines, 'file.processed', { file: join(dirs.main, 'catalogue-1.csv') });
    await drop(dirs.main, 'catalogue-2.csv', 'sku,name,code\nP-1,Apple,C1\n');
    await waitEvent(log.lines, 'sync.summary', { result: 'held' });

    const before = Date.now();
    const stock = await drop(dirs.stock, 'stock-1.csv', 'sku,qty\nP-1,7\nP-2,3\n');
    const stopped = await waitEvent(log.lines, 'sync.summary', { code: 'HELD_OTHER_FEED' });
    await waitEvent(log.lines, 'sync.retry_scheduled', { file: stock });
    const after = Date.now();
    // The summary names the stock feed (its rows read, nothing merged): the per-feed series count the sync.
    expect(stopped).toMatchObject({ result: 'waiting', feed: { name: 'stock', role: 'update', matched: 0, unmatched: 0 } });
    expect(await service.metrics.registry.metrics()).toContain('dataset_connector_feed_syncs_total{dataset="shop",feed="stock",outcome="waiting"} 1');
    expect(await service.metrics.registry.metrics()).toContain('dataset_connector_feed_rows_total{dataset="shop",feed="stock",kind="read"} 2');

    const config = await loadConfig(s.configPath);
    const ds = config.datasets.shop!;
    const statusNow = async () => {
      const cli = await cliEngine(config, pino({ level: 'silent' }), []);
      try {
        const st = cli.engine.status(ds);
        return { ...st, feeds: await feedFilesNow(config, ds, st.feeds), waitingFiles: await waitingFilesNow(st.waitingFiles), nextRun: null };
      } finally {
        await cli.close();
      }
    };
    const held = await statusNow();
    expect(held.waitingFiles).toEqual([{ feed: 'stock', file: stock, code: 'HELD_OTHER_FEED', message: expect.stringContaining('dataset-connector approve shop'), since: expect.any(String) }]);
    const since = Date.parse(held.waitingFiles[0]!.since);
    expect(since).toBeGreaterThanOrEqual(before);
    expect(since).toBeLessThanOrEqual(after);
    const line = statusLine(held, ds.feeds);
    expect(line).toContain(`; feed stock: ${stock} waits since ${held.waitingFiles[0]!.since} (HELD_OTHER_FEED): a change of feed "main" waits for a person`);
    expect(line).toContain('approve it (dataset-connector approve shop) or discard it (dataset-connector discard shop)');

    // Discarded beside the daemon: status says what now, before the daemon has looked.
    // The key as the CLI reads it (the daemon has it from the scenario's env).
    process.env.DATASET_KEY = s.env.DATASET_KEY;
    const cli = await cliEngine(config, pino({ level: 'silent' }), ['shop']).finally(() => delete process.env.DATASET_KEY);
    try {
      expect(await cli.engine.discard(ds)).toMatchObject({ action: 'discarded' });
    } finally {
      await cli.close();
    }
    expect(statusLine(await statusNow(), ds.feeds)).toContain(`; feed stock: ${stock} waits since ${held.waitingFiles[0]!.since} (HELD_OTHER_FEED): what it waited for was approved or discarded: the running daemon takes it within 5 s`);
    expect(timers.fire('held')).toBe(1);
    await waitEvent(log.lines, 'file.processed', { file: stock });
    await service.idle();
    expect((await statusNow()).waitingFiles).toEqual([]);
    expect(events(log.lines, 'sync.summary', { file: stock }).map((e) => e.result)).toEqual(['waiting', 'published']);
    expect(await service.metrics.registry.metrics()).toContain('dataset_connector_feed_syncs_total{dataset="shop",feed="stock",outcome="published"} 1');
  });

  it('a waiting file moved away while the daemon is stopped waits no more: status leaves it out, the next start forgets it', async () => {
    const s = await serviceScenario(fx.emu, 'waiting-gone');
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
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: new ManualClock() });
    await drop(dirs.main, 'catalogue-1.csv', 'sku,name,code\nP-1,Apple,C1\nP-2,Pear,C2\nP-3,Plum,C3\nP-4,Fig,C4\n');
    await waitEvent(log.lines, 'file.processed', { file: join(dirs.main, 'catalogue-1.csv') });
    await drop(dirs.main, 'catalogue-2.csv', 'sku,name,code\nP-1,Apple,C1\n');
    await waitEvent(log.lines, 'sync.summary', { result: 'held' });
    const stock = await drop(dirs.stock, 'stock-1.csv', 'sku,qty\nP-1,7\n');
    await waitEvent(log.lines, 'sync.retry_scheduled', { file: stock });
    await service.stop();

    const config = await loadConfig(s.configPath);
    const ds = config.datasets.shop!;
    const rows = async () => {
      const cli = await cliEngine(config, pino({ level: 'silent' }), []);
      try {
        return cli.engine.status(ds).waitingFiles;
      } finally {
        await cli.close();
      }
    };
    expect((await rows()).map((w) => w.file)).toEqual([stock]);
    await rm(stock);
    expect(await waitingFilesNow(await rows())).toEqual([]);
    const again = await Service.start({ configPath: s.configPath, logger: capture().logger, env: s.env, clock: new ManualClock() });
    fx.services.push(again);
    await until(async () => (await rows()).length === 0, 'the start forgot the wait of a file that is gone');
  });
  // #13 leftover: a waiting file moved away and back while the daemon runs is a new arrival; its wait starts again
  // (the row of the first wait stayed, as the daemon hears of no file leaving). An hour passes on the daemon's clock
  // in between, so the first time cannot pass for the second. A restart's scan of a file that waits keeps its time.
  it('a waiting file moved away and back while the daemon runs waits since it came back', async () => {
    const s = await serviceScenario(fx.emu, 'waiting-back');
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
    let offset = 0;
    const log = capture();
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: new ManualClock(() => Date.now() + offset) });
    fx.services.push(service);
    await drop(dirs.main, 'catalogue-1.csv', 'sku,name,code\nP-1,Apple,C1\nP-2,Pear,C2\nP-3,Plum,C3\nP-4,Fig,C4\n');
    await waitEvent(log.lines, 'file.processed', { file: join(dirs.main, 'catalogue-1.csv') });
    await drop(dirs.main, 'catalogue-2.csv', 'sku,name,code\nP-1,Apple,C1\n');
    await waitEvent(log.lines, 'sync.summary', { result: 'held' });
    const stock = await drop(dirs.stock, 'stock-1.csv', 'sku,qty\nP-1,7\n');
    await waitEvent(log.lines, 'sync.summary', { code: 'HELD_OTHER_FEED', file: stock });

    const config = await loadConfig(s.configPath);
    const ds = config.datasets.shop!;
    const rows = async () => {
      const cli = await cliEngine(config, pino({ level: 'silent' }), []);
      try {
        return cli.engine.status(ds).waitingFiles;
      } finally {
        await cli.close();
      }
    };
    const first = Date.parse((await rows())[0]!.since);

    const away = join(s.dir, 'stock-1.csv');
    await rename(stock, away);
    // Another file of the folder, taken after the move: the watcher has seen stock-1.csv leave by then.
    const other = await drop(dirs.stock, 'stock-2.csv', 'sku,qty\nP-2,3\n');
    await waitEvent(log.lines, 'sync.summary', { code: 'HELD_OTHER_FEED', file: other });
    offset = 3_600_000;
    await rename(away, stock);
    // The file back is taken with the other one still in the folder: one sync of both, waiting again.
    const third = await waitEvent(log.lines, 'sync.summary', { code: 'HELD_OTHER_FEED' }, 3);
    expect(String(third.file)).toContain(stock);
    const back = (await rows()).find((w) => w.file === stock)!;
    expect(Date.parse(back.since)).toBeGreaterThanOrEqual(first + 3_600_000);

    // A restart an hour later finds both files still waiting: they wait since before it.
    await service.stop();
    offset = 7_200_000;
    const log2 = capture();
    const again = await Service.start({ configPath: s.configPath, logger: log2.logger, env: s.env, clock: new ManualClock(() => Date.now() + offset) });
    fx.services.push(again);
    await waitEvent(log2.lines, 'sync.summary', { code: 'HELD_OTHER_FEED' });
    await again.idle();
    expect((await rows()).find((w) => w.file === stock)!.since).toBe(back.since);
  });

  it('a shared export\'s file kept behind a held change: status says who ends the wait', () => {
    const base = { dataset: 'store-001', activeVersion: 3, confirmedAt: null, records: 2, owned: 2, notOwned: 0, lastSync: null, lastSuccessAt: null, openPlan: null, paused: null, feeds: [], pausedFeeds: [], waitingFiles: [], nextRun: null };
    const kept = { export: 'ho', feed: 'stock', file: '/in/stock-1.csv', result: 'waiting', code: 'HELD_OTHER_FEED', since: '2026-11-27T10:00:00.000Z', newer: 1 };
    const held = { kind: 'guard', version: 4, reason: 'deletes 3 of 4 records', ageMs: 60_000, since: '2026-11-27T09:59:00.000Z' };
    expect(statusLine({ ...base, held, keptExportFiles: [kept] }, {})).toContain(
      '; export ho (feed stock): keeps /in/stock-1.csv since 2026-11-27T10:00:00.000Z (waiting: HELD_OTHER_FEED), 1 newer file(s) wait in the folder for it: it waits for a person to run dataset-connector approve store-001 or dataset-connector discard store-001',
    );
    // Once the change is approved or discarded, the line no longer sends the person to do it.
    expect(statusLine({ ...base, held: null, keptExportFiles: [kept] }, {})).not.toContain('approve');
  });
});
