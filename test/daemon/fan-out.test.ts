import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { chain, headOffice } from './fan-out-helpers.js';
import { capture, daemonFixture, drop, events, ManualClock, until, waitEvent } from './service-harness.js';

// Issue 13's fan-out: a chain's head office writes one stock file for every store; each store is a dataset.
// One watcher serves the folder; each file goes to every dataset taking it, and is archived once after all.

describe('daemon: one export fanned out to several datasets (issue 13)', () => {
  const fx = daemonFixture();
  const services = fx.services;
  afterEach(() => fx.emu.emulator.faults.clear());

  it('one file, three datasets, after: move: each dataset gets its rows or its column, and the file is archived once after all three', async () => {
    const c = await chain(fx.emu, 'fan1');
    const log = capture();
    const service = await Service.start({ configPath: c.configPath, logger: log.logger, env: c.env, clock: new ManualClock() });
    services.push(service);
    expect(service.exports.names()).toEqual(['ho']);

    await drop(c.inbox, 'stock-1.csv', headOffice((sku) => sku.length * 10 + Number(sku[1])));
    const processed = await waitEvent(log.lines, 'file.processed', { export: 'ho' });
    expect(processed.takers).toEqual(['store-001: published', 'store-002: published', 'store-003: published']);
    expect(c.stocks(0)).toEqual({ A1: 21, A2: 22 });
    expect(c.stocks(1)).toEqual({ B1: 21, B2: 22 });
    expect(c.stocks(2)).toEqual({ A1: 121, A2: 122, B1: 121, B2: 122 });
    // Archived once, after the last dataset: no dataset ever saw it gone.
    expect(await readdir(c.inbox)).toEqual(['processed']);
    const archived = await readdir(join(c.inbox, 'processed'));
    expect(archived).toHaveLength(1);
    expect(archived[0]).toMatch(/^stock-1\.\d{8}-\d{6}\.csv$/);
    const summaries = events(log.lines, 'sync.summary');
    expect(summaries.map((s) => s.dataset)).toEqual(['store-001', 'store-002', 'store-003']);
    const archivedAt = log.lines.findIndex((l) => l.event === 'file.processed');
    expect(log.lines.findLastIndex((l) => l.event === 'sync.summary')).toBeLessThan(archivedAt);
    // Read once for the three (one decode and parse, each its rows and mapping), its scratch gone after.
    expect(events(log.lines, 'file.read')).toEqual([expect.objectContaining({ export: 'ho', takers: ['store-001/stock', 'store-002/stock', 'store-003/stock'], rows: 4 })]);
    expect((await readdir(join(c.dir, 'state', 'state.db.plans'))).filter((n) => n.startsWith('shared.'))).toEqual([]);
    // The export is named once a line (the logger's binding), not twice as "export":"ho","export":"ho".
    expect(log.raw().split('\n').filter((l) => (l.match(/"export":/g) ?? []).length > 1)).toEqual([]);
  });

  it('a dataset refusing the file (bad rows under its mapping) leaves the others published; the file goes to failed/ with that dataset\'s reject file', async () => {
    const c = await chain(fx.emu, 'fan2');
    const log = capture();
    const service = await Service.start({ configPath: c.configPath, logger: log.logger, env: c.env, clock: new ManualClock() });
    services.push(service);

    await drop(c.inbox, 'stock-2.csv', headOffice(() => 5, { badStore002: true }));
    const rejected = await waitEvent(log.lines, 'file.rejected', { export: 'ho' });
    expect(rejected.takers).toEqual(['store-001: published', 'store-002: rejected', 'store-003: published']);
    expect(c.stocks(0)).toEqual({ A1: 5, A2: 5 });
    expect(c.stocks(1)).toEqual({});
    expect(c.stocks(2)).toEqual({ A1: 105, A2: 105, B1: 105, B2: 105 });
    expect(await readdir(c.inbox)).toEqual(['failed']);
    const failed = (await readdir(join(c.inbox, 'failed'))).sort();
    expect(failed).toHaveLength(2);
    expect(failed[0]).toMatch(/^stock-2\.\d{8}-\d{6}\.csv$/);
    expect(failed[1]).toMatch(/^stock-2\.\d{8}-\d{6}\.store-002\.rejected\.csv$/);
    const reject = await readFile(join(c.inbox, 'failed', failed[1]!), 'utf8');
    expect(reject).toMatch(/^\ufeffline,column,value,code,reason\r\n4,Qty,many,.*\r\n5,Qty,many,/);
  });

  it('a file bad in itself (cut off) is refused for every dataset, read once, with one reason naming the file and what to do', async () => {
    const c = await chain(fx.emu, 'fan6');
    const log = capture();
    const service = await Service.start({ configPath: c.configPath, logger: log.logger, env: c.env, clock: new ManualClock() });
    services.push(service);

    await drop(c.inbox, 'stock-6.csv', headOffice(() => 5).slice(0, -12));
    const rejected = await waitEvent(log.lines, 'file.rejected', { export: 'ho' });
    expect(rejected.takers).toEqual(['store-001: rejected', 'store-002: rejected', 'store-003: rejected']);
    expect(rejected.msg).toBe('file rejected by every dataset taking it');
    expect(rejected.reason).toMatch(/stock-6\.csv: the last row \(line 5\) .* truncated .* export it again$/);
    expect(events(log.lines, 'sync.summary').map((s) => [s.dataset, s.code])).toEqual([
      ['store-001', 'TRUNCATED'],
      ['store-002', 'TRUNCATED'],
      ['store-003', 'TRUNCATED'],
    ]);
    expect(events(log.lines, 'file.read')).toHaveLength(1);
    expect(c.stocks(0)).toEqual({});
    expect(await readdir(c.inbox)).toEqual(['failed']);
  });

  it('a server error for one dataset keeps the file; its retry runs only that dataset (the others are never sent it again), then archives it', async () => {
    const c = await chain(fx.emu, 'fan3');
    const log = capture();
    const timers = new ManualClock();
    const service = await Service.start({ configPath: c.configPath, logger: log.logger, env: c.env, clock: timers });
    services.push(service);

    fx.emu.emulator.faults.add({ path: /fan3-store-2/, status: 503, count: Infinity });
    await drop(c.inbox, 'stock-3.csv', headOffice(() => 7));
    const kept = await waitEvent(log.lines, 'file.kept', { export: 'ho' });
    expect(kept.waiting).toEqual(['store-002']);
    await waitEvent(log.lines, 'sync.retry_scheduled');
    expect(c.stocks(0)).toEqual({ A1: 7, A2: 7 });
    expect(c.stocks(2)).toEqual({ A1: 107, A2: 107, B1: 107, B2: 107 });
    expect(await readdir(c.inbox)).toEqual(['stock-3.csv']);

    fx.emu.emulator.faults.clear();
    expect(timers.fire('retry')).toBe(1);
    const done = await waitEvent(log.lines, 'file.processed', { export: 'ho' });
    expect(done.takers).toEqual(['store-001: published', 'store-002: published', 'store-003: published']);
    expect(c.stocks(1)).toEqual({ B1: 7, B2: 7 });
    // The first run read the file once for all three; the retry reads it for store-002 alone, in its own sync.
    expect(events(log.lines, 'file.read').map((e) => e.takers)).toEqual([['store-001/stock', 'store-002/stock', 'store-003/stock']]);
    expect(events(log.lines, 'sync.summary', { dataset: 'store-001' })).toHaveLength(1);
    expect(events(log.lines, 'sync.summary', { dataset: 'store-003' })).toHaveLength(1);
    expect(await readdir(c.inbox)).toEqual(['processed']);
  });

  it('a restart between datasets runs only the datasets not done with the file', async () => {
    const c = await chain(fx.emu, 'fan4');
    const log = capture();
    const first = await Service.start({ configPath: c.configPath, logger: log.logger, env: c.env, clock: new ManualClock() });
    services.push(first);
    fx.emu.emulator.faults.add({ path: /fan4-store-2/, status: 503, count: Infinity });
    await drop(c.inbox, 'stock-4.csv', headOffice(() => 9));
    await waitEvent(log.lines, 'file.kept', { export: 'ho' });
    await first.stop();
    services.splice(0);
    const writesBefore = fx.emu.emulator.requests.filter((r) => r.method !== 'GET').length;

    fx.emu.emulator.faults.clear();
    const log2 = capture();
    const second = await Service.start({ configPath: c.configPath, logger: log2.logger, env: c.env, clock: new ManualClock() });
    services.push(second);
    const done = await waitEvent(log2.lines, 'file.processed', { export: 'ho' });
    expect(done.takers).toEqual(['store-001: published', 'store-002: published', 'store-003: published']);
    expect(c.stocks(1)).toEqual({ B1: 9, B2: 9 });
    // Only store-002 wrote: the datasets done before the restart were not sent the file again.
    const writes = fx.emu.emulator.requests.slice(0).filter((r) => r.method !== 'GET');
    expect(writes.slice(writesBefore).every((r) => r.path.includes('fan4-store-2'))).toBe(true);
    await until(async () => (await readdir(c.inbox)).join() === 'processed', 'archived', log2.lines);
  });

  it('run --once takes the newest file waiting in the export folder (older ones superseded) and runs every taker', async () => {
    const c = await chain(fx.emu, 'fan5');
    const t0 = Date.now() - 60_000;
    await drop(c.inbox, 'stock-old.csv', headOffice(() => 1), t0);
    await drop(c.inbox, 'stock-new.csv', headOffice(() => 2), t0 + 1_000);
    const log = capture();
    const results: string[] = [];
    const service = await Service.start({ configPath: c.configPath, logger: log.logger, env: c.env, clock: new ManualClock(), once: true, onSummary: (s) => results.push(`${s.dataset}: ${s.result}`) });
    services.push(service);
    await service.idle();
    expect(results).toEqual(['store-001: published', 'store-002: published', 'store-003: published']);
    expect(c.stocks(1)).toEqual({ B1: 2, B2: 2 });
    const archived = (await readdir(join(c.inbox, 'processed'))).sort();
    expect(archived).toEqual([expect.stringMatching(/^stock-new\.\d{8}-\d{6}\.csv$/), expect.stringMatching(/^stock-old\.\d{8}-\d{6}\.superseded\.csv$/)]);
  });
  it('the watching daemon started with several files waiting: the full takers take only the newest, the older go to processed/ superseded, oldest first', async () => {
    const c = await chain(fx.emu, 'fan7');
    const t0 = Date.now() - 60_000;
    await drop(c.inbox, 'stock-1.csv', headOffice(() => 1), t0);
    await drop(c.inbox, 'stock-2.csv', headOffice(() => 2), t0 + 1_000);
    await drop(c.inbox, 'stock-3.csv', headOffice(() => 3), t0 + 2_000);
    const log = capture();
    const results: string[] = [];
    const service = await Service.start({ configPath: c.configPath, logger: log.logger, env: c.env, clock: new ManualClock(), onSummary: (s) => results.push(`${s.dataset}: ${s.file?.split('/').pop()} ${s.result}`) });
    services.push(service);
    await waitEvent(log.lines, 'file.processed', { file: join(c.inbox, 'stock-3.csv') });
    await service.idle();
    // Each store synced once, with the newest file: never an older file's stock published first.
    expect(results.sort()).toEqual(['store-001: stock-3.csv published', 'store-002: stock-3.csv published', 'store-003: stock-3.csv published']);
    expect(c.stocks(1)).toEqual({ B1: 3, B2: 3 });
    expect(events(log.lines, 'file.archived', { reason: 'superseded' }).map((e) => (e.file as string).split('/').pop())).toEqual(['stock-1.csv', 'stock-2.csv']);
    const archived = (await readdir(join(c.inbox, 'processed'))).sort();
    expect(archived).toEqual([expect.stringMatching(/^stock-1\.\d{8}-\d{6}\.superseded\.csv$/), expect.stringMatching(/^stock-2\.\d{8}-\d{6}\.superseded\.csv$/), expect.stringMatching(/^stock-3\.\d{8}-\d{6}\.csv$/)]);
  });
});
