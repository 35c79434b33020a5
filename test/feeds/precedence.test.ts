import { utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { feedView } from '../../src/feeds/view.js';
import { recs, scenario, type Scenario } from '../sync/harness.js';
import { CATALOGUE, STOCK, stockOf, withFeeds, writeStockFile } from './helpers.js';

/** Issue 13: a field two feeds map (attributes.stock in the catalogue and the stock file) goes by precedence. */

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
});

const T0 = Date.UTC(2026, 0, 5, 9, 0, 0);
const ids = recs(10).map((r) => r.record_id);
const all = (q: number) => Object.fromEntries(ids.map((id) => [id, q]));

/** A file whose modification time (the time of its values) is T0 + `s` seconds. */
async function at<T extends string>(file: T, s: number): Promise<T> {
  await utimes(file, new Date(T0 + s * 1000), new Date(T0 + s * 1000));
  return file;
}

async function catalogue(s: Scenario, stock: number, name: string): Promise<string> {
  const file = join(s.dir, name);
  await writeFile(file, ['SKU,Name,Code,Stock', ...recs(10).map((r) => `${r.record_id},${r.display_name},${r.api_value},${stock}`)].join('\n') + '\n');
  return file;
}

const WITH_STOCK = { ...CATALOGUE, mapping: { fields: { ...CATALOGUE.mapping.fields, 'attributes.stock': { column: 'Stock', transforms: ['integer'] } } } };

describe('precedence of a field two feeds map', () => {
  it('newest: the value of the most recent file wins, whichever feed wrote it', async () => {
    sc = await scenario({ manualClock: true, policy: { guards: { values: [] } } });
    const ds = withFeeds(sc, { main: WITH_STOCK, stock: STOCK }, { precedence: { 'attributes.stock': 'newest' } });
    expect((await sc.engine.sync(ds, { file: await at(await catalogue(sc, 1, 'cat-0.csv'), 0) })).result).toBe('published');
    expect((await sc.engine.sync(feedView(ds, 'stock'), { file: await at(await writeStockFile(sc, { 'r-001': 50 }, 'stock-1.csv'), 10) })).result).toBe('published');
    // A catalogue written before the stock file: its stock of r-001 is older and loses.
    expect((await sc.engine.sync(ds, { file: await at(await catalogue(sc, 1, 'cat-1.csv'), 5) })).result).toBe('unchanged');
    expect(stockOf(sc)).toEqual({ ...all(1), 'r-001': 50 });
    // A catalogue written after it wins.
    expect((await sc.engine.sync(ds, { file: await at(await catalogue(sc, 2, 'cat-2.csv'), 20) })).result).toBe('published');
    expect(stockOf(sc)).toEqual(all(2));
  });

  it('a named feed wins whenever it has a value; the catalogue gives the others', async () => {
    sc = await scenario({ manualClock: true, policy: { guards: { values: [] } } });
    const ds = withFeeds(sc, { main: WITH_STOCK, stock: STOCK }, { precedence: { 'attributes.stock': 'stock' } });
    expect((await sc.engine.sync(ds, { file: await at(await catalogue(sc, 1, 'cat-0.csv'), 0) })).result).toBe('published');
    expect((await sc.engine.sync(feedView(ds, 'stock'), { file: await at(await writeStockFile(sc, { 'r-001': 50 }, 'stock-1.csv'), 10) })).result).toBe('published');
    expect((await sc.engine.sync(ds, { file: await at(await catalogue(sc, 2, 'cat-1.csv'), 20) })).result).toBe('published');
    expect(stockOf(sc)).toEqual({ ...all(2), 'r-001': 50 });
  });

  it('the catalogue named as winner: a stock file syncing after it does not overwrite its stock; its value is kept and answers where the catalogue has none', async () => {
    sc = await scenario({ manualClock: true, policy: { guards: { values: [] } } });
    const ds = withFeeds(sc, { main: WITH_STOCK, stock: STOCK }, { precedence: { 'attributes.stock': 'main' } });
    const stock = feedView(ds, 'stock');
    expect((await sc.engine.sync(ds, { file: await at(await catalogue(sc, 1, 'cat-0.csv'), 0) })).result).toBe('published');
    // Before: the stock file set 50 whatever precedence said (validate refused this precedence for that reason).
    const lost = await sc.engine.sync(stock, { file: await at(await writeStockFile(sc, { 'r-001': 50, 'r-002': 60 }, 'stock-1.csv'), 10) });
    expect(lost).toMatchObject({ result: 'unchanged' });
    expect(lost.feed).toMatchObject({ matched: 2, fieldsChanged: 0 });
    expect(stockOf(sc)).toEqual(all(1));
    // The catalogue stops having a stock for r-001 (an empty cell): the stock feed's value, kept in its state, answers.
    const file = join(sc.dir, 'cat-1.csv');
    await writeFile(file, ['SKU,Name,Code,Stock', ...recs(10).map((r) => `${r.record_id},${r.display_name},${r.api_value},${r.record_id === 'r-001' ? '' : 1}`)].join('\n') + '\n');
    expect((await sc.engine.sync(ds, { file: await at(file, 20) })).result).toBe('published');
    expect(stockOf(sc)).toEqual({ ...all(1), 'r-001': 50 });
  });

  it('newest when the stock file syncs: a stock file written before the catalogue loses to it, one written after wins', async () => {
    sc = await scenario({ manualClock: true, policy: { guards: { values: [] } } });
    const ds = withFeeds(sc, { main: WITH_STOCK, stock: STOCK }, { precedence: { 'attributes.stock': 'newest' } });
    const stock = feedView(ds, 'stock');
    expect((await sc.engine.sync(ds, { file: await at(await catalogue(sc, 1, 'cat-0.csv'), 10) })).result).toBe('published');
    expect((await sc.engine.sync(stock, { file: await at(await writeStockFile(sc, { 'r-001': 50 }, 'stock-1.csv'), 5) })).result).toBe('unchanged');
    expect(stockOf(sc)).toEqual(all(1));
    expect((await sc.engine.sync(stock, { file: await at(await writeStockFile(sc, { 'r-001': 60 }, 'stock-2.csv'), 15) })).result).toBe('published');
    expect(stockOf(sc)).toEqual({ ...all(1), 'r-001': 60 });
  });

  it("newest: a file's time is never later than when it was read (a clock ahead on the exporting machine does not win for ever)", async () => {
    sc = await scenario({ manualClock: true, policy: { guards: { values: [] } } });
    const ds = withFeeds(sc, { main: WITH_STOCK, stock: STOCK }, { precedence: { 'attributes.stock': 'newest' } });
    const now = sc.em.emulator.clock.now();
    const stamp = async <T extends string>(file: T, ms: number): Promise<T> => {
      await utimes(file, new Date(ms), new Date(ms));
      return file;
    };
    expect((await sc.engine.sync(ds, { file: await stamp(await catalogue(sc, 1, 'cat-0.csv'), now - 60_000) })).result).toBe('published');
    // Written "an hour from now": read now, its values are of now.
    expect((await sc.engine.sync(feedView(ds, 'stock'), { file: await stamp(await writeStockFile(sc, { 'r-001': 50 }, 'stock-1.csv'), now + 3_600_000) })).result).toBe('published');
    sc.em.emulator.clock.advance(600_000);
    // A catalogue written 5 minutes later is newer than the stock file as read.
    expect((await sc.engine.sync(ds, { file: await stamp(await catalogue(sc, 2, 'cat-1.csv'), now + 300_000) })).result).toBe('published');
    expect(stockOf(sc)).toEqual(all(2));
  });

  it('a change list loses to the named feed too: its update of a field the catalogue wins is kept in its state, not published', async () => {
    sc = await scenario({ manualClock: true, policy: { guards: { values: [] } } });
    const CHANGES = { role: 'changes', source: { type: 'csv' }, mapping: { fields: { record_id: 'SKU', 'attributes.stock': { column: 'Qty', transforms: ['integer'] } } }, commands: { column: 'Op' } };
    const ds = withFeeds(sc, { main: WITH_STOCK, changes: CHANGES }, { precedence: { 'attributes.stock': 'main' } });
    expect((await sc.engine.sync(ds, { file: await at(await catalogue(sc, 1, 'cat-0.csv'), 0) })).result).toBe('published');
    const file = join(sc.dir, 'changes-1.csv');
    await writeFile(file, 'SKU,Qty,Op\nr-001,50,update\nr-002,60,upsert\n');
    expect((await sc.engine.sync(feedView(ds, 'changes'), { file: await at(file, 10) })).result).toBe('unchanged');
    expect(stockOf(sc)).toEqual(all(1));
  });
});
