import { mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import { FeedPauses } from '../../src/snapshot/feed-pauses.js';
import { capture, daemonFixture, drop, events, ManualClock, serviceScenario, waitEvent, type Line, type ServiceScenario } from './service-harness.js';

/**
 * Issue 13 in the daemon: each feed's own folder runs that feed, and files
 * waiting together make one plan (counted by the emulator's versions: with
 * staging, one plan is one draft and one publish). Issue 14: pause --feed.
 */

const CATALOGUE = 'sku,name,code\nP-1,Apple,C1\nP-2,Pear,C2\nP-3,Plum,C3\nP-4,Fig,C4\n';

interface FeedDaemon {
  s: ServiceScenario;
  dirs: { main: string; stock: string; changes: string };
  service: Service;
  log: { lines: Line[] };
  clock: ManualClock;
  /** A second connection to the state db, as the CLI's pause and resume would use. */
  cli: StateDb;
  /** The emulator's active version (one per plan published). */
  version(): number;
  record(id: string): { display_name: string; attributes: Record<string, unknown> } | undefined;
}

async function feedDaemon(fx: ReturnType<typeof daemonFixture>, id: string): Promise<FeedDaemon> {
  const s = await serviceScenario(fx.emu, id);
  const dirs = { main: join(s.inbox, 'main'), stock: join(s.inbox, 'stock'), changes: join(s.inbox, 'changes') };
  for (const d of Object.values(dirs)) await mkdir(d);
  const watch = (path: string) => ({ path, include: ['*.csv'], settle_ms: 100, poll_interval_ms: 30 });
  const base = s.dataset();
  await s.writeConfig({
    [id]: {
      api: base.api,
      policy: { staging: true, guards: { max_delete_ratio: 0.4 } },
      feeds: {
        main: { role: 'full', source: { type: 'csv' }, mapping: { fields: { record_id: 'sku', display_name: 'name', api_value: 'code' } }, watch: watch(dirs.main) },
        stock: { role: 'update', source: { type: 'csv' }, mapping: { fields: { record_id: 'sku', 'attributes.stock': { column: 'qty', transforms: ['integer'] } } }, watch: watch(dirs.stock) },
        changes: {
          role: 'changes',
          source: { type: 'csv' },
          mapping: { fields: { record_id: 'sku', 'attributes.price': { column: 'price', transforms: ['integer'] } } },
          commands: { column: 'op' },
          watch: watch(dirs.changes),
        },
      },
    },
  });
  const log = capture();
  const clock = new ManualClock();
  const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock });
  fx.services.push(service);
  const cli = openStateDb(join(s.dir, 'state', 'state.db'));
  return {
    s,
    dirs,
    service,
    log,
    clock,
    cli,
    version: () => fx.emu.emulator.describe(id).active_version,
    record: (rid) => fx.emu.emulator.records(id).find((r) => r.record_id === rid) as never,
  };
}

/** Pause the dataset, drop the files (in this order, a second apart in mtime), see each wait, resume: they are handed on together. */
async function burst(d: FeedDaemon, id: string, files: Array<[dir: string, name: string, text: string]>): Promise<void> {
  d.cli.snapshot(id).pause({ at: Date.now(), by: 'test' });
  const skippedBefore = events(d.log.lines, 'file.skipped', { reason: 'paused' }).length;
  const t0 = Date.now();
  for (const [i, [dir, name, text]] of files.entries()) await drop(dir, name, text, t0 + i * 1000);
  await waitEvent(d.log.lines, 'file.skipped', { reason: 'paused' }, skippedBefore + files.length);
  d.cli.snapshot(id).unpause();
  d.clock.fire('pause');
}

async function withCatalogue(d: FeedDaemon): Promise<void> {
  await drop(d.dirs.main, 'catalogue.csv', CATALOGUE);
  await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.main, 'catalogue.csv') });
  await d.service.idle();
}

describe('daemon: each feed by its own folder, and files waiting together as one plan (issue 13)', () => {
  const fx = daemonFixture();

  it("a stock file in the stock feed's folder is published through that feed, keeping the catalogue's names", async () => {
    const d = await feedDaemon(fx, 'feeds-one');
    await withCatalogue(d);
    const v = d.version();
    await drop(d.dirs.stock, 'stock-1.csv', 'sku,qty\nP-1,7\nP-3,0\n');
    const processed = await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.stock, 'stock-1.csv') });
    expect(processed).toMatchObject({ feed: 'stock', fate: 'processed', action: 'moved' });
    expect(d.version()).toBe(v + 1);
    expect(d.record('P-1')).toMatchObject({ display_name: 'Apple', attributes: { stock: 7 } });
    expect(d.record('P-3')?.attributes.stock).toBe(0);
    expect(d.record('P-2')?.attributes.stock).toBeUndefined();
    expect((await readdir(join(d.dirs.stock, 'processed'))).length).toBe(1);
  });

  it('a catalogue file and a stock file arriving together make one plan (one publish), naming both files', async () => {
    const d = await feedDaemon(fx, 'feeds-together');
    await withCatalogue(d);
    const v = d.version();
    await burst(d, 'feeds-together', [
      [d.dirs.main, 'catalogue-2.csv', CATALOGUE.replace('Apple', 'Green apple')],
      [d.dirs.stock, 'stock-1.csv', 'sku,qty\nP-1,5\nP-2,6\n'],
    ]);
    await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.stock, 'stock-1.csv') });
    await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.main, 'catalogue-2.csv') });
    await d.service.idle();
    expect(d.version()).toBe(v + 1);
    expect(d.record('P-1')).toMatchObject({ display_name: 'Green apple', attributes: { stock: 5 } });
    expect(d.record('P-2')?.attributes.stock).toBe(6);
    const coalesced = events(d.log.lines, 'sync.coalesced');
    expect(coalesced).toHaveLength(1);
    expect(coalesced[0]!.files).toEqual([
      { file: join(d.dirs.main, 'catalogue-2.csv'), feed: 'main' },
      { file: join(d.dirs.stock, 'stock-1.csv'), feed: 'stock' },
    ]);
    const summary = events(d.log.lines, 'sync.summary').at(-1)!;
    expect(summary).toMatchObject({ result: 'published', files: [expect.objectContaining({ feed: 'main', outcome: 'planned' }), expect.objectContaining({ feed: 'stock', outcome: 'planned' })] });
  });

  it('three stock files in a burst: one plan; the newest value of each record wins and no value of an older file is lost', async () => {
    const d = await feedDaemon(fx, 'feeds-burst');
    await withCatalogue(d);
    const v = d.version();
    await burst(d, 'feeds-burst', [
      [d.dirs.stock, 's1.csv', 'sku,qty\nP-1,1\nP-2,1\n'],
      [d.dirs.stock, 's2.csv', 'sku,qty\nP-2,2\nP-3,2\n'],
      [d.dirs.stock, 's3.csv', 'sku,qty\nP-3,3\n'],
    ]);
    for (const n of ['s1.csv', 's2.csv', 's3.csv']) await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.stock, n) });
    await d.service.idle();
    expect(d.version()).toBe(v + 1);
    expect([1, 2, 3, 4].map((i) => d.record(`P-${i}`)?.attributes.stock)).toEqual([1, 2, 3, undefined]);
    // The feed state keeps the newest file's value: a later catalogue keeps these stocks.
    await drop(d.dirs.main, 'catalogue-3.csv', CATALOGUE.replace('Fig', 'Black fig'));
    await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.main, 'catalogue-3.csv') });
    await d.service.idle();
    expect([1, 2, 3].map((i) => d.record(`P-${i}`)?.attributes.stock)).toEqual([1, 2, 3]);
    expect(d.record('P-4')?.display_name).toBe('Black fig');
  });

  it('change lists in a burst are all applied, in order (oldest first), in one plan', async () => {
    const d = await feedDaemon(fx, 'feeds-changes');
    await withCatalogue(d);
    const v = d.version();
    await burst(d, 'feeds-changes', [
      [d.dirs.changes, 'c1.csv', 'sku,price,op\nP-1,100,update\nP-2,200,update\n'],
      [d.dirs.changes, 'c2.csv', 'sku,price,op\nP-1,150,update\nP-4,0,delete\n'],
      [d.dirs.changes, 'c3.csv', 'sku,price,op\nP-2,250,update\n'],
    ]);
    for (const n of ['c1.csv', 'c2.csv', 'c3.csv']) await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.changes, n) });
    await d.service.idle();
    expect(d.version()).toBe(v + 1);
    expect(d.record('P-1')?.attributes.price).toBe(150);
    expect(d.record('P-2')?.attributes.price).toBe(250);
    expect(d.record('P-4')).toBeUndefined();
    expect(d.record('P-3')?.display_name).toBe('Plum');
  });

  it('a change list older than the catalogue in the same burst goes first, on its own: the catalogue is the later word on which records exist', async () => {
    const d = await feedDaemon(fx, 'feeds-split');
    await withCatalogue(d);
    const v = d.version();
    await burst(d, 'feeds-split', [
      [d.dirs.changes, 'c1.csv', 'sku,price,op\nP-4,0,delete\nP-1,99,update\n'],
      [d.dirs.main, 'catalogue-2.csv', CATALOGUE.replace('Plum', 'Red plum')],
    ]);
    await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.main, 'catalogue-2.csv') });
    await d.service.idle();
    expect(events(d.log.lines, 'sync.coalesced', { reason: 'change_list_older_than_export' })).toHaveLength(1);
    expect(d.version()).toBe(v + 2);
    expect(d.record('P-4')?.display_name).toBe('Fig');
    expect(d.record('P-3')?.display_name).toBe('Red plum');
    expect(d.record('P-1')?.attributes.price).toBe(99);
  });

  it('a bad file in a burst fails alone: it goes to failed/ and nothing of it is published; the others are', async () => {
    const d = await feedDaemon(fx, 'feeds-bad');
    await withCatalogue(d);
    const v = d.version();
    await burst(d, 'feeds-bad', [
      [d.dirs.stock, 'good-1.csv', 'sku,qty\nP-1,4\n'],
      [d.dirs.stock, 'bad.csv', 'sku,qty\nP-2,9\nP-3,lots\n'],
      [d.dirs.stock, 'good-2.csv', 'sku,qty\nP-4,8\n'],
    ]);
    const rejected = await waitEvent(d.log.lines, 'file.rejected', { file: join(d.dirs.stock, 'bad.csv'), fate: 'failed' });
    expect(rejected).toMatchObject({ feed: 'stock', action: 'moved' });
    for (const n of ['good-1.csv', 'good-2.csv']) await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.stock, n) });
    await d.service.idle();
    expect(d.version()).toBe(v + 1);
    expect([1, 2, 3, 4].map((i) => d.record(`P-${i}`)?.attributes.stock)).toEqual([4, undefined, undefined, 8]);
    expect((await readdir(join(d.dirs.stock, 'failed'))).some((n) => n.startsWith('bad.'))).toBe(true);
  });

  it('a change list with an unknown command word in a burst fails alone (INVALID_COMMAND in its reject file); the other lists are applied', async () => {
    const d = await feedDaemon(fx, 'feeds-badcmd');
    await withCatalogue(d);
    const v = d.version();
    await burst(d, 'feeds-badcmd', [
      [d.dirs.changes, 'c1.csv', 'sku,price,op\nP-1,10,update\n'],
      [d.dirs.changes, 'c2.csv', 'sku,price,op\nP-2,20,update\nP-3,30,frobnicate\n'],
      [d.dirs.changes, 'c3.csv', 'sku,price,op\nP-4,40,update\n'],
    ]);
    await waitEvent(d.log.lines, 'file.rejected', { file: join(d.dirs.changes, 'c2.csv'), fate: 'failed' });
    for (const n of ['c1.csv', 'c3.csv']) await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.changes, n) });
    await d.service.idle();
    expect(d.version()).toBe(v + 1);
    expect([1, 2, 3, 4].map((i) => d.record(`P-${i}`)?.attributes.price)).toEqual([10, undefined, undefined, 40]);
    const failed = await readdir(join(d.dirs.changes, 'failed'));
    const rejects = failed.find((n) => n.endsWith('.rejected.csv'));
    expect(rejects).toBeDefined();
    expect(await readFile(join(d.dirs.changes, 'failed', rejects!), 'utf8')).toContain('INVALID_COMMAND');
  });

  it('pause --feed: that feed\'s file waits in its folder (no run, no move) while another feed runs; resume takes it without a restart', async () => {
    const d = await feedDaemon(fx, 'feeds-pause');
    await withCatalogue(d);
    new FeedPauses(d.cli.conn, 'feeds-pause').pause('stock', { at: Date.now(), by: 'test' });
    await drop(d.dirs.stock, 'stock-1.csv', 'sku,qty\nP-1,3\n');
    await waitEvent(d.log.lines, 'file.skipped', { reason: 'feed_paused', feed: 'stock' });
    await drop(d.dirs.main, 'catalogue-2.csv', CATALOGUE.replace('Pear', 'Nashi'));
    await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.main, 'catalogue-2.csv') });
    await d.service.idle();
    expect(d.record('P-2')?.display_name).toBe('Nashi');
    expect(await readdir(d.dirs.stock)).toEqual(['stock-1.csv']);
    expect(d.record('P-1')?.attributes.stock).toBeUndefined();
    // Still paused at the poll: nothing moves.
    expect(d.clock.fire('pause')).toBe(1);
    await d.service.idle();
    expect(await readdir(d.dirs.stock)).toEqual(['stock-1.csv']);

    new FeedPauses(d.cli.conn, 'feeds-pause').unpause('stock');
    d.clock.fire('pause');
    await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.stock, 'stock-1.csv') });
    await d.service.idle();
    expect(d.record('P-1')?.attributes.stock).toBe(3);
  });

  it('a restart between feeds: a stock file written while the daemon was down is taken at start, the catalogue it published kept', async () => {
    const d = await feedDaemon(fx, 'feeds-restart');
    await withCatalogue(d);
    await d.service.stop();
    await drop(d.dirs.stock, 'stock-1.csv', 'sku,qty\nP-2,12\n');
    await drop(d.dirs.stock, 'stock-2.csv', 'sku,qty\nP-3,13\n');
    const log = capture();
    const again = await Service.start({ configPath: d.s.configPath, logger: log.logger, env: d.s.env, clock: new ManualClock() });
    fx.services.push(again);
    for (const n of ['stock-1.csv', 'stock-2.csv']) await waitEvent(log.lines, 'file.processed', { file: join(d.dirs.stock, n) });
    await again.idle();
    expect(d.record('P-2')).toMatchObject({ display_name: 'Pear', attributes: { stock: 12 } });
    expect(d.record('P-3')?.attributes.stock).toBe(13);
    // Both files of the update feed were taken (none superseded, as older files of a full feed's folder are).
    expect(events(log.lines, 'file.archived')).toEqual([]);
  });
});
