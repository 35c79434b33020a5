import { open, readdir, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import Database from 'better-sqlite3';
import { openStateDb } from '../../src/snapshot/db.js';
import { SCHEMA_VERSION } from '../../src/snapshot/migrations.js';
import { datasetStatus } from '../../src/sync/status.js';
import { FeedPauses } from '../../src/snapshot/feed-pauses.js';
import { chain, headOffice } from './fan-out-helpers.js';
import { capture, daemonFixture, drop, events, ManualClock, until, waitEvent } from './service-harness.js';

// Issue 13, per-taker progress: a chain's head office writes stock files for every store. Each store goes through
// the export's files on its own: one store paused or retrying holds back only itself, the others go on, and each
// file is archived once every store is done with it. Before, the export's newer files waited for ALL stores
// while one kept a file (export_takers recorded only the last file per store): one paused store stopped stock
// updates for the whole chain.

const stock1 = headOffice(() => 5);
const stock2 = headOffice((sku) => (sku === 'A1' || sku === 'B1' ? 7 : 5));

/** The chain of stores taking stock updates, their catalogues published (run --once takes export cat). */
async function stockChain(fx: ReturnType<typeof daemonFixture>, prefix: string) {
  const c = await chain(fx.emu, prefix, undefined, 'update');
  const once = await Service.start({ configPath: c.configPath, logger: capture().logger, env: c.env, clock: new ManualClock(), once: true });
  await once.idle();
  await once.stop();
  expect(c.stocks(2)).toEqual({ A1: undefined, A2: undefined, B1: undefined, B2: undefined });
  return c;
}

describe('daemon: each dataset takes a shared export\'s files at its own pace (issue 13)', () => {
  const fx = daemonFixture();
  afterEach(() => fx.emu.emulator.faults.clear());

  it('store A\'s feed paused, two stock files arrive: B and C take both in order at once, A takes both in order at resume, both archived after A', async () => {
    const c = await stockChain(fx, 'prog1');
    const log = capture();
    const timers = new ManualClock();
    const service = await Service.start({ configPath: c.configPath, logger: log.logger, env: c.env, clock: timers });
    fx.services.push(service);
    const cli = openStateDb(join(c.dir, 'state', 'state.db'));
    try {
      new FeedPauses(cli.conn, 'store-001').pause('stock', { at: Date.now(), by: 'test' });
      const t0 = Date.now() - 10_000;
      await drop(c.inbox, 'stock-1.csv', stock1, t0);
      expect((await waitEvent(log.lines, 'file.kept', { file: join(c.inbox, 'stock-1.csv') })).waiting).toEqual(['store-001']);
      await drop(c.inbox, 'stock-2.csv', stock2, t0 + 1_000);
      // B and C take the newer file without waiting for A; it waits in the folder for A, and says so.
      const waits = await waitEvent(log.lines, 'file.kept', { file: join(c.inbox, 'stock-2.csv'), reason: 'older_file_retrying' });
      expect(waits.waiting).toEqual(['store-001']);
      await until(() => c.stocks(1).B1 === 7 && c.stocks(2).A1 === 107, 'B and C took stock-2', log.lines);
      expect(c.stocks(1)).toEqual({ B1: 7, B2: 5 });
      expect(c.stocks(2)).toEqual({ A1: 107, A2: 105, B1: 107, B2: 105 });
      expect(c.stocks(0)).toEqual({ A1: undefined, A2: undefined });
      // Read once for B and C at each file (A, paused, is at the first with them, and not at the second).
      expect(events(log.lines, 'file.read').map((e) => e.takers)).toEqual([
        ['store-001/stock', 'store-002/stock', 'store-003/stock'],
        ['store-002/stock', 'store-003/stock'],
      ]);
      expect((await readdir(c.inbox)).sort()).toEqual(['stock-1.csv', 'stock-2.csv']);
      expect(events(log.lines, 'file.processed')).toEqual([]);
      // status: store-001 keeps stock-1 (its feed paused), and stock-2 waits in the folder for it; the others keep nothing.
      expect(datasetStatus(cli, 'store-001', Date.now()).keptExportFiles).toEqual([
        { export: 'ho', feed: 'stock', file: join(c.inbox, 'stock-1.csv'), result: 'paused', code: 'FEED_PAUSED', since: expect.any(String), newer: 1 },
      ]);
      expect(datasetStatus(cli, 'store-002', Date.now()).keptExportFiles).toEqual([]);

      new FeedPauses(cli.conn, 'store-001').unpause('stock');
      expect(timers.fire('pause')).toBe(1);
      const processed = await waitEvent(log.lines, 'file.processed', {}, 2);
      const files = events(log.lines, 'file.processed').map((e) => e.file);
      expect(files).toEqual([join(c.inbox, 'stock-1.csv'), join(c.inbox, 'stock-2.csv')]);
      expect(processed.takers).toEqual(['store-001: published', 'store-002: published', 'store-003: published']);
      expect(c.stocks(0)).toEqual({ A1: 7, A2: 5 });
      // A took them in order: stock-1's sync before stock-2's; each store synced each file once.
      const a = events(log.lines, 'sync.summary', { dataset: 'store-001' }).filter((s) => s.result === 'published').map((s) => s.file);
      expect(a).toEqual([join(c.inbox, 'stock-1.csv'), join(c.inbox, 'stock-2.csv')]);
      for (const ds of ['store-002', 'store-003']) expect(events(log.lines, 'sync.summary', { dataset: ds }).map((s) => s.result)).toEqual(['published', 'published']);
      expect(await readdir(c.inbox)).toEqual(['processed']);
      // Its progress goes with the archived files.
      expect(cli.conn.prepare('SELECT count(*) FROM export_files').pluck().get()).toBe(0);
    } finally {
      cli.close();
    }
  });

  it('a 5xx for one store keeps the file for that store only: the others take the next file at once, and the store catches up in order at its retry', async () => {
    const c = await stockChain(fx, 'prog2');
    const log = capture();
    const timers = new ManualClock();
    const service = await Service.start({ configPath: c.configPath, logger: log.logger, env: c.env, clock: timers });
    fx.services.push(service);
    fx.emu.emulator.faults.add({ path: /prog2-store-2/, status: 503, count: Infinity });
    const t0 = Date.now() - 10_000;
    await drop(c.inbox, 'stock-1.csv', stock1, t0);
    await waitEvent(log.lines, 'sync.retry_scheduled', { dataset: 'store-002' });
    await drop(c.inbox, 'stock-2.csv', stock2, t0 + 1_000);
    await until(() => c.stocks(0).A1 === 7 && c.stocks(2).A1 === 107, 'A and C took stock-2', log.lines);
    expect(c.stocks(1)).toEqual({ B1: undefined, B2: undefined });
    // One retry timer: store-002's (the others have none).
    expect(timers.labels().filter((l) => l === 'retry')).toHaveLength(1);

    fx.emu.emulator.faults.clear();
    expect(timers.fire('retry')).toBe(1);
    await waitEvent(log.lines, 'file.processed', {}, 2);
    expect(events(log.lines, 'file.processed').map((e) => e.file)).toEqual([join(c.inbox, 'stock-1.csv'), join(c.inbox, 'stock-2.csv')]);
    expect(c.stocks(1)).toEqual({ B1: 7, B2: 5 });
    const b = events(log.lines, 'sync.summary', { dataset: 'store-002' }).map((s) => [s.file, s.result]);
    expect(b).toEqual([
      [join(c.inbox, 'stock-1.csv'), 'failed'],
      [join(c.inbox, 'stock-1.csv'), 'published'],
      [join(c.inbox, 'stock-2.csv'), 'published'],
    ]);
    for (const ds of ['store-001', 'store-003']) expect(events(log.lines, 'sync.summary', { dataset: ds })).toHaveLength(2);
    expect(await readdir(c.inbox)).toEqual(['processed']);
  });

  it('a restart while one store is behind resumes each store at its own file: none takes a file twice, none skips one', async () => {
    const c = await stockChain(fx, 'prog3');
    const log = capture();
    const first = await Service.start({ configPath: c.configPath, logger: log.logger, env: c.env, clock: new ManualClock() });
    fx.services.push(first);
    fx.emu.emulator.faults.add({ path: /prog3-store-2/, status: 503, count: Infinity });
    const t0 = Date.now() - 10_000;
    await drop(c.inbox, 'stock-1.csv', stock1, t0);
    await waitEvent(log.lines, 'sync.retry_scheduled', { dataset: 'store-002' });
    // C's first write of stock-2 (A1) is applied and its answer lost: C re-sends it (same idempotency key) while A1
    // already shows 107. A stop on that alone lands inside C's sync, between its A1 and B1: C is interrupted, and the
    // restart rightly finishes it (its B1, a sync.summary of stock-2). This wait had to be on C being done, not on A1.
    fx.emu.emulator.faults.add({ method: 'PATCH', path: /prog3-store-3\/records\/A1/, applyThenDrop: true, count: 1 });
    await drop(c.inbox, 'stock-2.csv', stock2, t0 + 1_000);
    // The pass is over: A and C each noted done with stock-2, which waits in the folder for B.
    await waitEvent(log.lines, 'file.kept', { file: join(c.inbox, 'stock-2.csv'), reason: 'older_file_retrying' });
    expect(c.stocks(0)).toEqual({ A1: 7, A2: 5 });
    expect(c.stocks(2)).toEqual({ A1: 107, A2: 105, B1: 107, B2: 105 });
    expect(events(log.lines, 'sync.summary', { file: join(c.inbox, 'stock-2.csv') }).map((s) => [s.dataset, s.result])).toEqual([
      ['store-001', 'published'],
      ['store-003', 'published'],
    ]);
    await first.stop();
    fx.services.splice(0);
    const writesBefore = fx.emu.emulator.requests.filter((r) => r.method !== 'GET').length;

    fx.emu.emulator.faults.clear();
    const log2 = capture();
    const second = await Service.start({ configPath: c.configPath, logger: log2.logger, env: c.env, clock: new ManualClock() });
    fx.services.push(second);
    await waitEvent(log2.lines, 'file.processed', {}, 2);
    expect(events(log2.lines, 'file.processed').map((e) => e.file)).toEqual([join(c.inbox, 'stock-1.csv'), join(c.inbox, 'stock-2.csv')]);
    expect(events(log2.lines, 'sync.summary').map((s) => [s.dataset, s.file])).toEqual([
      ['store-002', join(c.inbox, 'stock-1.csv')],
      ['store-002', join(c.inbox, 'stock-2.csv')],
    ]);
    expect(c.stocks(1)).toEqual({ B1: 7, B2: 5 });
    const writes = fx.emu.emulator.requests.filter((r) => r.method !== 'GET').slice(writesBefore);
    expect(writes.length).toBeGreaterThan(0);
    expect(writes.every((r) => r.path.includes('prog3-store-2'))).toBe(true);
    await until(async () => (await readdir(c.inbox)).join() === 'processed', 'archived', log2.lines);
  });

  it('a state db of the build before migration 16 (export_takers only) keeps working: the kept file runs only for the store not done with it', async () => {
    const c = await chain(fx.emu, 'prog4');
    const log = capture();
    const first = await Service.start({ configPath: c.configPath, logger: log.logger, env: c.env, clock: new ManualClock() });
    fx.services.push(first);
    fx.emu.emulator.faults.add({ path: /prog4-store-2/, status: 503, count: Infinity });
    await drop(c.inbox, 'stock-1.csv', headOffice(() => 9));
    await waitEvent(log.lines, 'sync.retry_scheduled', { dataset: 'store-002' });
    await first.stop();
    fx.services.splice(0);
    // What the build before wrote: schema 14, each store's last file in export_takers, no export_files (nor the tables of 15, 18, 19 and 20).
    const raw = new Database(join(c.dir, 'state', 'state.db'));
    raw.exec('DROP TABLE export_files; DROP TABLE record_tallies; DROP TABLE value_bases; DROP TABLE waiting_files; DROP TABLE state_identity; DROP TABLE dataset_servers');
    // Migration 17's (issue 18), upgraded again with the others.
    raw.exec('DROP TRIGGER records_generation_insert; DROP TRIGGER records_generation_update; DROP TRIGGER records_generation_delete; DROP TABLE record_generations');
    raw.pragma('user_version = 14');
    expect(raw.prepare('SELECT dataset FROM export_takers ORDER BY dataset').pluck().all()).toEqual(['store-001', 'store-003']);
    raw.close();
    const writesBefore = fx.emu.emulator.requests.filter((r) => r.method !== 'GET').length;

    fx.emu.emulator.faults.clear();
    const log2 = capture();
    const second = await Service.start({ configPath: c.configPath, logger: log2.logger, env: c.env, clock: new ManualClock() });
    fx.services.push(second);
    const done = await waitEvent(log2.lines, 'file.processed', { export: 'ho' });
    // Stores 001 and 003 are done with this content (their export_takers row): skipped, not sent it again.
    expect(done.takers).toEqual(['store-001: skipped', 'store-002: published', 'store-003: skipped']);
    expect(c.stocks(1)).toEqual({ B1: 9, B2: 9 });
    expect(fx.emu.emulator.requests.filter((r) => r.method !== 'GET').slice(writesBefore).every((r) => r.path.includes('prog4-store-2'))).toBe(true);
    const db = openStateDb(join(c.dir, 'state', 'state.db'));
    try {
      expect(db.schemaVersion).toBe(SCHEMA_VERSION);
    } finally {
      db.close();
    }
  });

  // Review of #13 (rv13b, D6): a POS that creates its export and writes it a few seconds later (a long query
  // between) leaves a 0-byte file that is stable for settle_ms. It is taken as an export, refused EMPTY_FILE for
  // every store and moved to failed/ while the writer still has it open: the writer's rows then land in
  // failed/stock-1.<time>.csv, which nothing syncs, under a reason ("is empty (0 bytes)") that is no longer true.
  it('a 0-byte file the exporter is still to write is not moved to failed/: once written, its rows are synced', async () => {
    const c = await stockChain(fx, 'prog-empty');
    const log = capture();
    const service = await Service.start({ configPath: c.configPath, logger: log.logger, env: c.env, clock: new ManualClock() });
    fx.services.push(service);
    const t0 = Date.now() - 10_000;
    const writer = await open(join(c.inbox, 'stock-1.csv'), 'w');
    try {
      await utimes(join(c.inbox, 'stock-1.csv'), t0 / 1000, t0 / 1000);
      // A later file, taken and archived: the empty one, older and settled long before it, has had its turn.
      await drop(c.inbox, 'stock-2.csv', stock1, t0 + 1_000);
      await waitEvent(log.lines, 'file.processed', { file: join(c.inbox, 'stock-2.csv') });
      expect(await readdir(c.inbox)).toContain('stock-1.csv');
      await writer.write(stock2);
    } finally {
      await writer.close();
    }
    await waitEvent(log.lines, 'file.processed', { file: join(c.inbox, 'stock-1.csv') });
    expect(c.stocks(1)).toEqual({ B1: 7, B2: 5 });
  });
});
