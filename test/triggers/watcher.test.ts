import { mkdir, mkdtemp, open, readdir, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { drop, ManualClock } from '../daemon/service-harness.js';
import { watchConfigSchema, type WatchConfig } from '../../src/config/watch.js';
import { FolderWatcher } from '../../src/triggers/watcher.js';
import type { ReadyFile } from '../../src/files/ready-file.js';

const SETTLE_MS = 120;
const watchers: FolderWatcher[] = [];

afterEach(async () => {
  await Promise.all(watchers.splice(0).map((w) => w.close()));
});

async function folder(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'dc-watch-'));
}

function cfg(dir: string, extra: Partial<WatchConfig> = {}): WatchConfig {
  return watchConfigSchema.parse({ path: dir, settle_ms: SETTLE_MS, poll_interval_ms: 40, ...extra });
}

/** Start a watcher that collects what it reports. */
async function start(c: WatchConfig) {
  const ready: ReadyFile[] = [];
  const superseded: ReadyFile[] = [];
  const waiters: Array<() => void> = [];
  const w = new FolderWatcher(c, {
    onReady: (f) => {
      ready.push(f);
      waiters.splice(0).forEach((r) => r());
    },
    onSuperseded: (f) => superseded.push(f),
  });
  watchers.push(w);
  await w.start();
  const nextReady = () => new Promise<void>((r) => waiters.push(r));
  return { w, ready, superseded, nextReady };
}

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Instead of sleeping before a "nothing else happened" check: a file written
 * now settles after every check already due for the files written before it,
 * so once it is reported, a second report (or a premature one) of those would
 * have come. Returns what was reported besides it.
 */
async function barrier(h: Awaited<ReturnType<typeof start>>, dir: string, marker = false): Promise<ReadyFile[]> {
  const next = h.nextReady();
  await writeFile(join(dir, 'zz-barrier.csv'), 'b\n');
  if (marker) await writeFile(join(dir, 'zz-barrier.csv.done'), '');
  await next;
  while (!h.ready.some((f) => f.name === 'zz-barrier.csv')) await h.nextReady();
  return h.ready.filter((f) => f.name !== 'zz-barrier.csv');
}

describe('folder watcher', () => {
  it('reports a slowly written file once, when complete', async () => {
    const dir = await folder();
    // A wide margin between write gaps (40 ms) and settle_ms, so a loaded machine does not split it.
    const h = await start(cfg(dir, { include: ['*.csv'], settle_ms: 600 }));
    const fh = await open(join(dir, 'stock.csv'), 'w');
    for (let i = 0; i < 5; i++) {
      await fh.write(`row-${i}\n`);
      await fh.sync();
      await tick(40);
    }
    await fh.close();
    expect(h.ready).toEqual([]);
    await h.nextReady();
    expect((await barrier(h, dir)).map((f) => [f.name, f.size])).toEqual([['stock.csv', 30]]);
  });

  it('ignores temporary names and reports the file a rename produces', async () => {
    const dir = await folder();
    const h = await start(cfg(dir));
    await writeFile(join(dir, 'stock.csv.tmp'), 'a\n');
    await writeFile(join(dir, '~$stock.xlsx'), 'lock');
    await writeFile(join(dir, '.hidden'), 'x');
    await rename(join(dir, 'stock.csv.tmp'), join(dir, 'stock.csv'));
    await h.nextReady();
    expect((await barrier(h, dir)).map((f) => f.name)).toEqual(['stock.csv']);
  });

  it('reports the same name again after an overwrite', async () => {
    const dir = await folder();
    const h = await start(cfg(dir));
    const p = join(dir, 'stock.csv');
    await writeFile(p, 'a\n');
    await h.nextReady();
    await writeFile(p, 'b\n');
    await utimes(p, new Date(), new Date(Date.now() + 5000));
    await h.nextReady();
    expect(h.ready.map((f) => f.name)).toEqual(['stock.csv', 'stock.csv']);
  });

  it('waits for the marker file', async () => {
    const dir = await folder();
    const h = await start(cfg(dir, { marker: '{name}.done' }));
    await writeFile(join(dir, 'stock.csv'), 'a\n');
    // Settled but without its marker: checked (before the barrier is reported) and not reported.
    expect(await barrier(h, dir, true)).toEqual([]);
    h.ready.length = 0;
    const next = h.nextReady();
    await writeFile(join(dir, 'stock.csv.done'), '');
    await next;
    expect(h.ready.map((f) => [f.name, f.markerPath])).toEqual([['stock.csv', join(dir, 'stock.csv.done')]]);
  });

  it('at start-up reports the newest file and supersedes the older ones', async () => {
    const dir = await folder();
    for (const [name, age] of [['a.csv', 300], ['b.csv', 100], ['c.csv', 200]] as const) {
      await writeFile(join(dir, name), name);
      const t = new Date(Date.now() - age * 1000);
      await utimes(join(dir, name), t, t);
    }
    const h = await start(cfg(dir));
    await h.nextReady();
    expect(h.ready.map((f) => f.name)).toEqual(['b.csv']);
    expect(h.superseded.map((f) => f.name).sort()).toEqual(['a.csv', 'c.csv']);
  });

  it('polling mode works without file-system events', async () => {
    const dir = await folder();
    const h = await start(cfg(dir, { polling: true }));
    await writeFile(join(dir, 'stock.csv'), 'a\n');
    await h.nextReady();
    expect(h.ready.map((f) => f.name)).toEqual(['stock.csv']);
  });

  it('sees a new file of a name that was moved away', async () => {
    const dir = await folder();
    const h = await start(cfg(dir));
    const p = join(dir, 'stock.csv');
    await writeFile(p, 'a\n');
    await h.nextReady();
    await rm(p);
    h.w.forget(p);
    await writeFile(p, 'a\n');
    await h.nextReady();
    expect(h.ready).toHaveLength(2);
    expect(await readdir(dir)).toEqual(['stock.csv']);
  });

  // The daemon moves an export to processed/ and the next one, same name, size and mtime (timestamps kept by
  // a copy, or a coarse clock on a share), lands before chokidar says the first is gone: chokidar calls it a
  // change of the old file (events: within its 100 ms atomic window; polling: not even that, only a raw stat change).
  for (const polling of [false, true]) {
    it(`${polling ? 'polling' : 'fs events'}: a new export of the name, size and mtime of the one just moved away is reported`, async () => {
      const dir = await folder();
      // A poll interval wide enough that the move and the new file land between two polls.
      const h = await start(cfg(dir, polling ? { polling: true, poll_interval_ms: 400 } : {}));
      const p = join(dir, 'stock.csv');
      const t = new Date(Date.now() - 60_000);
      await writeFile(p, 'sku\n1\n');
      await utimes(p, t, t);
      await h.nextReady();
      await mkdir(join(dir, 'processed'));
      await rename(p, join(dir, 'processed', 'stock.20240101-000000.csv'));
      await writeFile(join(dir, '.stock.csv.tmp'), 'sku\n2\n');
      await utimes(join(dir, '.stock.csv.tmp'), t, t);
      await rename(join(dir, '.stock.csv.tmp'), p);
      await h.nextReady();
      expect(h.ready.map((f) => [f.name, f.size])).toEqual([
        ['stock.csv', 6],
        ['stock.csv', 6],
      ]);
      expect(h.ready[1]!.mtimeMs).toBe(h.ready[0]!.mtimeMs);
    });
  }
});

describe('folder watcher: files handed on oldest first', () => {
  /** A watcher on the test's clock: its time moves when the test says, and a file's settle check runs when the test fires it. */
  async function manual(dir: string, extra: Partial<WatchConfig> = {}) {
    const time = { now: Date.now() };
    const clock = new ManualClock(() => time.now);
    const ready: string[] = [];
    const files: ReadyFile[] = [];
    const w = new FolderWatcher(cfg(dir, { settle_ms: 1_000, ...extra }), { onReady: (f) => (ready.push(f.name), files.push(f)), onSuperseded: () => undefined }, { clock, keepAll: true });
    watchers.push(w);
    await w.start();
    return { w, clock, ready, files, time };
  }
  const settleOf = (dir: string, name: string) => `settle ${join(dir, name)}`;
  const labelsOf = (dir: string, names: string[]) => names.map((n) => settleOf(dir, n)).sort();

  it('a newer file complete first waits for an older one still settling (an update feed must not take them out of order)', async () => {
    const dir = await folder();
    const { w, clock, ready, time } = await manual(dir);
    const t = Date.now();
    await drop(dir, 'stock-2.csv', 'newer', t + 5_000);
    await vi.waitFor(() => expect(clock.labels()).toContain(settleOf(dir, 'stock-2.csv')));
    await drop(dir, 'stock-1.csv', 'older', t - 5_000);
    await vi.waitFor(() => expect(clock.labels().sort()).toEqual(labelsOf(dir, ['stock-1.csv', 'stock-2.csv'])));
    expect(w.settling).toBe(2);
    time.now += 2_000;
    // The newer one is complete first: it is not handed on while the older is still settling.
    expect(clock.fire(settleOf(dir, 'stock-2.csv'))).toBe(1);
    await vi.waitFor(() => expect(w.settling).toBeLessThan(2));
    clock.fire(settleOf(dir, 'stock-1.csv'));
    await vi.waitFor(() => expect(ready).toHaveLength(2));
    expect(ready).toEqual(['stock-1.csv', 'stock-2.csv']);
  });

  it('an older file that goes away, or waits for its marker, holds nothing back', async () => {
    const dir = await folder();
    const { w, clock, ready, time } = await manual(dir, { marker: '{name}.done' });
    const t = Date.now();
    await drop(dir, 'new.csv', 'n', t + 5_000);
    await writeFile(join(dir, 'new.csv.done'), '');
    await drop(dir, 'gone.csv', 'g', t - 9_000);
    await drop(dir, 'unflagged.csv', 'u', t - 5_000);
    await vi.waitFor(() => expect(clock.labels().sort()).toEqual(labelsOf(dir, ['gone.csv', 'new.csv', 'unflagged.csv'])));
    expect(w.settling).toBe(3);
    time.now += 2_000;
    clock.fire(settleOf(dir, 'new.csv'));
    clock.fire(settleOf(dir, 'unflagged.csv'));
    // new.csv complete (no longer settling); unflagged.csv complete but waiting for its marker (still counted).
    await vi.waitFor(() => expect(w.settling).toBe(2));
    await vi.waitFor(() => expect(clock.labels().sort()).toEqual(labelsOf(dir, ['gone.csv', 'unflagged.csv'])));
    // gone.csv, older and still settling, holds new.csv; unflagged.csv, waiting for a marker that may never come, does not.
    expect(ready).toEqual([]);
    await rm(join(dir, 'gone.csv'));
    w.forget(join(dir, 'gone.csv'));
    await vi.waitFor(() => expect(ready).toEqual(['new.csv']));
  });

  it('files found at start-up are handed on oldest first', async () => {
    const dir = await folder();
    const t = Date.now();
    for (const [name, age] of [['c.csv', 100], ['a.csv', 300], ['b.csv', 200]] as const) await drop(dir, name, name, t - age * 1000);
    const { clock, ready, time } = await manual(dir);
    await vi.waitFor(() => expect(clock.labels().sort()).toEqual(labelsOf(dir, ['a.csv', 'b.csv', 'c.csv'])));
    time.now += 2_000;
    // Fired newest first: still handed on oldest first.
    for (const name of ['c.csv', 'b.csv', 'a.csv']) clock.fire(settleOf(dir, name));
    await vi.waitFor(() => expect(ready).toHaveLength(3));
    expect(ready).toEqual(['a.csv', 'b.csv', 'c.csv']);
  });

  it('a 0-byte file is not complete at settle_ms (its writer may write it later) and holds back no newer file; a truly empty one goes after 60 s', async () => {
    const dir = await folder();
    const { w, clock, ready, files, time } = await manual(dir, { settle_ms: 100 });
    const t = time.now;
    const writer = await open(join(dir, 'stock-1.csv'), 'w');
    try {
      await utimes(join(dir, 'stock-1.csv'), (t - 10_000) / 1000, (t - 10_000) / 1000);
      await vi.waitFor(() => expect(clock.labels()).toContain(settleOf(dir, 'stock-1.csv')));
      await drop(dir, 'stock-2.csv', 'newer', t - 5_000);
      await vi.waitFor(() => expect(clock.labels()).toContain(settleOf(dir, 'stock-2.csv')));
      time.now += 100;
      clock.fire(settleOf(dir, 'stock-1.csv'));
      clock.fire(settleOf(dir, 'stock-2.csv'));
      // stock-2 is complete and goes, though the older empty stock-1 is still settling: it waits 60 s, not settle_ms.
      await vi.waitFor(() => expect(ready).toEqual(['stock-2.csv']));
      // Still empty: looked at again every settle_ms, not complete before 60 s.
      await vi.waitFor(() => expect(clock.labels()).toContain(settleOf(dir, 'stock-1.csv')));
      time.now += 100;
      clock.fire(settleOf(dir, 'stock-1.csv'));
      await vi.waitFor(() => expect(clock.labels()).toContain(settleOf(dir, 'stock-1.csv')));
      expect(ready).toEqual(['stock-2.csv']);
      expect(w.settling).toBe(1);
      await writer.write('written at last');
    } finally {
      await writer.close();
    }
    // Written: it settles over settle_ms as any file (seen with its content, then unchanged settle_ms later).
    await vi.waitFor(() => {
      time.now += 100;
      clock.fire(settleOf(dir, 'stock-1.csv'));
      expect(ready).toEqual(['stock-2.csv', 'stock-1.csv']);
    });
    expect(time.now - t).toBeLessThan(60_000);
    expect(files[1]!.size).toBe('written at last'.length);

    // An export that stays empty is handed on (to be refused or held as today) once 60 s have passed.
    await writeFile(join(dir, 'stock-3.csv'), '');
    await vi.waitFor(() => expect(clock.labels()).toContain(settleOf(dir, 'stock-3.csv')));
    time.now += 100;
    clock.fire(settleOf(dir, 'stock-3.csv'));
    await vi.waitFor(() => expect(clock.labels()).toContain(settleOf(dir, 'stock-3.csv')));
    expect(ready).toHaveLength(2);
    time.now += 60_000;
    clock.fire(settleOf(dir, 'stock-3.csv'));
    await vi.waitFor(() => expect(ready).toEqual(['stock-2.csv', 'stock-1.csv', 'stock-3.csv']));
  });
});
