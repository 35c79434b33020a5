import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { capture, daemonFixture, drop, events, ManualClock, serviceScenario, until, waitEvent, type Line, type ServiceScenario } from './service-harness.js';

/**
 * Issue 13: a catalogue and a stock file written together make one plan,
 * whichever of the two settles first. When a feed's file is ready while
 * another feed's folder is still receiving a file, the dataset waits for it
 * (coalesce_ms, on the injected clock: the test fires it). The stock folder
 * here needs a marker ("{name}.done"), so a stock file without one is
 * "still arriving" for as long as the test wants, with no real-time race.
 */

const CATALOGUE = 'sku,name,code\nP-1,Apple,C1\nP-2,Pear,C2\nP-3,Plum,C3\n';
const COALESCE_MS = 5_000;

interface Daemon {
  s: ServiceScenario;
  dirs: { main: string; stock: string };
  service: Service;
  log: { lines: Line[] };
  clock: ManualClock;
  version(): number;
  record(id: string): { display_name: string; attributes: Record<string, unknown> } | undefined;
  /** Jobs waiting or running for the dataset. */
  depth(): number;
}

async function start(fx: ReturnType<typeof daemonFixture>, id: string): Promise<Daemon> {
  const s = await serviceScenario(fx.emu, id);
  const dirs = { main: join(s.inbox, 'main'), stock: join(s.inbox, 'stock') };
  for (const d of Object.values(dirs)) await mkdir(d);
  const watch = (path: string) => ({ path, include: ['*.csv'], settle_ms: 100, poll_interval_ms: 30 });
  const base = s.dataset();
  await s.writeConfig({
    [id]: {
      api: base.api,
      coalesce_ms: COALESCE_MS,
      feeds: {
        main: { role: 'full', source: { type: 'csv' }, mapping: { fields: { record_id: 'sku', display_name: 'name', api_value: 'code' } }, watch: watch(dirs.main) },
        stock: {
          role: 'update',
          source: { type: 'csv' },
          mapping: { fields: { record_id: 'sku', 'attributes.stock': { column: 'qty', transforms: ['integer'] } } },
          watch: { ...watch(dirs.stock), marker: '{name}.done' },
        },
      },
    },
  });
  const log = capture();
  const clock = new ManualClock();
  const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock });
  fx.services.push(service);
  await drop(dirs.main, 'catalogue.csv', CATALOGUE);
  await waitEvent(log.lines, 'file.processed', { file: join(dirs.main, 'catalogue.csv') });
  await service.idle();
  return {
    s,
    dirs,
    service,
    log,
    clock,
    version: () => fx.emu.emulator.describe(id).active_version,
    record: (rid) => fx.emu.emulator.records(id).find((r) => r.record_id === rid) as never,
    depth: () => service.datasets.get(id)!.depth,
  };
}

/** The stock file is complete: its marker is written. */
const flag = (d: Daemon, name: string) => writeFile(join(d.dirs.stock, `${name}.done`), '');

describe('daemon: files of two feeds arriving together make one plan (coalesce_ms)', () => {
  const fx = daemonFixture();

  it('a catalogue ready while the stock file is still arriving waits for it: one plan of both', async () => {
    const d = await start(fx, 'coalesce-one');
    const v = d.version();
    await drop(d.dirs.stock, 'stock-1.csv', 'sku,qty\nP-1,5\nP-2,6\n');
    await drop(d.dirs.main, 'catalogue-2.csv', CATALOGUE.replace('Apple', 'Green apple'));
    const gathering = await waitEvent(d.log.lines, 'sync.gathering');
    expect(gathering).toMatchObject({ feed: 'main', arriving: ['stock'], wait_ms: COALESCE_MS });
    expect(d.clock.pending.filter((t) => t.label === 'coalesce').map((t) => t.ms)).toEqual([COALESCE_MS]);
    await flag(d, 'stock-1.csv');
    await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.stock, 'stock-1.csv') });
    await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.main, 'catalogue-2.csv') });
    await d.service.idle();
    expect(events(d.log.lines, 'sync.gathered')).toEqual([expect.objectContaining({ ended: 'quiet' })]);
    expect(d.version()).toBe(v + 1);
    expect(d.record('P-1')).toMatchObject({ display_name: 'Green apple', attributes: { stock: 5 } });
    expect(events(d.log.lines, 'sync.coalesced')[0]!.files).toEqual([
      { file: join(d.dirs.main, 'catalogue-2.csv'), feed: 'main' },
      { file: join(d.dirs.stock, 'stock-1.csv'), feed: 'stock' },
    ]);
    // The wait ended with the stock file: no timer is left behind.
    expect(d.clock.labels()).not.toContain('coalesce');
  });

  it('a stock file still arriving when coalesce_ms has passed makes a second plan', async () => {
    const d = await start(fx, 'coalesce-two');
    const v = d.version();
    await drop(d.dirs.stock, 'stock-1.csv', 'sku,qty\nP-1,5\n');
    await drop(d.dirs.main, 'catalogue-2.csv', CATALOGUE.replace('Pear', 'Nashi'));
    await waitEvent(d.log.lines, 'sync.gathering');
    expect(d.clock.fire('coalesce')).toBe(1);
    await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.main, 'catalogue-2.csv') });
    expect(events(d.log.lines, 'sync.gathered')).toEqual([expect.objectContaining({ ended: 'interval', still_arriving: ['stock'] })]);
    await d.service.idle();
    expect(d.version()).toBe(v + 1);
    expect(d.record('P-2')?.display_name).toBe('Nashi');
    expect(d.record('P-1')?.attributes.stock).toBeUndefined();
    await flag(d, 'stock-1.csv');
    await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.stock, 'stock-1.csv') });
    await d.service.idle();
    expect(d.version()).toBe(v + 2);
    expect(d.record('P-1')?.attributes.stock).toBe(5);
  });

  it('a stop while waiting plans nothing: the files stay in their folders for the next start', async () => {
    const d = await start(fx, 'coalesce-stop');
    const v = d.version();
    await drop(d.dirs.stock, 'stock-1.csv', 'sku,qty\nP-1,5\n');
    await drop(d.dirs.main, 'catalogue-2.csv', CATALOGUE);
    await waitEvent(d.log.lines, 'sync.gathering');
    await d.service.stop();
    expect(events(d.log.lines, 'sync.gathered')).toEqual([expect.objectContaining({ ended: 'stopped' })]);
    expect(events(d.log.lines, 'file.ready', { file: join(d.dirs.main, 'catalogue-2.csv') })).toEqual([]);
    expect(d.version()).toBe(v);
    expect(await readdir(d.dirs.main)).toContain('catalogue-2.csv');
  });

  it('a stream of stock files cannot postpone the plan: the bound is armed once, and a file ready meanwhile joins', async () => {
    const d = await start(fx, 'coalesce-bound');
    const v = d.version();
    await drop(d.dirs.stock, 's1.csv', 'sku,qty\nP-1,1\n');
    await drop(d.dirs.stock, 's2.csv', 'sku,qty\nP-2,2\n');
    await drop(d.dirs.main, 'catalogue-2.csv', CATALOGUE.replace('Plum', 'Red plum'));
    expect(await waitEvent(d.log.lines, 'sync.gathering')).toMatchObject({ arriving: ['stock'], files_arriving: 2 });
    // s1 is complete while s2 is still arriving: the wait goes on, with the bound it began with.
    await flag(d, 's1.csv');
    await until(() => d.depth() === 2, 's1 waiting on the queue beside the gathering plan');
    expect(d.clock.pending.filter((t) => t.label === 'coalesce').map((t) => t.ms)).toEqual([COALESCE_MS]);
    expect(d.clock.fire('coalesce')).toBe(1);
    await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.stock, 's1.csv') });
    await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.main, 'catalogue-2.csv') });
    await d.service.idle();
    expect(events(d.log.lines, 'sync.gathered')).toEqual([expect.objectContaining({ ended: 'interval', still_arriving: ['stock'] })]);
    expect(d.version()).toBe(v + 1);
    expect(d.record('P-3')?.display_name).toBe('Red plum');
    expect(d.record('P-1')?.attributes.stock).toBe(1);
    await flag(d, 's2.csv');
    await waitEvent(d.log.lines, 'file.processed', { file: join(d.dirs.stock, 's2.csv') });
    await d.service.idle();
    expect(d.version()).toBe(v + 2);
    expect(d.record('P-2')?.attributes.stock).toBe(2);
  });
});
