import { afterEach, describe, expect, it } from 'vitest';
import { feedView } from '../../src/feeds/view.js';
import { recs, scenario, type Scenario } from '../sync/harness.js';
import { CATALOGUE, STOCK, stockOf, withFeeds, writeStockFile } from './helpers.js';

/** Issue 13: what an update feed does to the records its file does not list, and the guard on it. */

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
});

const ids = recs(30).map((r) => r.record_id);
const stockFor = (list: string[], q = 5) => Object.fromEntries(list.map((id) => [id, q]));

/** A catalogue of 30 published, every stock set to 5 by a first stock file; `missing` is the stock feed's strategy. */
async function setUp(missing: Record<string, unknown>, policy: Record<string, unknown> = {}) {
  sc = await scenario({ manualClock: true, policy });
  const ds = withFeeds(sc, { main: CATALOGUE, stock: { ...STOCK, missing } });
  expect((await sc.engine.sync(ds, { file: await sc.writeExport(recs(30), 'catalogue.csv') })).result).toBe('published');
  const stock = feedView(ds, 'stock');
  expect((await sc.engine.sync(stock, { file: await writeStockFile(sc, stockFor(ids), 'stock-0.csv') })).result).toBe('published');
  return { ds, stock, sc };
}

describe('missing-record strategies of an update feed', () => {
  it('set: records the file does not list get the values (stock 0); the others keep theirs', async () => {
    const { stock, sc } = await setUp({ strategy: 'set', values: { 'attributes.stock': 0 } });
    const sum = await sc.engine.sync(stock, { file: await writeStockFile(sc, stockFor(ids.slice(0, 26), 6), 'stock-1.csv') });
    expect(sum).toMatchObject({ result: 'published', changes: 30 });
    // Field values changed: 26 by the rows, 4 by the strategy.
    expect(sum.feed).toMatchObject({ matched: 26, changeable: 30, missing: 4, fieldsChanged: 30 });
    expect(stockOf(sc)).toEqual({ ...stockFor(ids.slice(0, 26), 6), ...stockFor(ids.slice(26), 0) });
    // The same file again: nothing left to set, nothing counted.
    const again = await sc.engine.sync(stock, { file: await writeStockFile(sc, stockFor(ids.slice(0, 26), 6), 'stock-2.csv') });
    expect(again).toMatchObject({ result: 'unchanged' });
    expect(again.feed).toMatchObject({ missing: 0 });
  });

  it('set past max_delete_ratio of the records it may change: held for a person, nothing published', async () => {
    const { stock, sc } = await setUp({ strategy: 'set', values: { 'attributes.stock': 0 } }, { guards: { values: [] } });
    const sum = await sc.engine.sync(stock, { file: await writeStockFile(sc, stockFor(ids.slice(0, 10)), 'stock-1.csv') });
    expect(sum).toMatchObject({ result: 'held', code: 'HELD_GUARD' });
    expect(sum.message).toMatch(/missing: set changes 20 of 30 records the file does not list \(66\.7%; limit 20\.0%/);
    expect(stockOf(sc)).toEqual(stockFor(ids));
  });

  it('deactivate: active false for the records not listed; max_deletes counts them too', async () => {
    const { stock, sc } = await setUp({ strategy: 'deactivate' }, { guards: { max_deletes: 2 } });
    const sum = await sc.engine.sync(stock, { file: await writeStockFile(sc, stockFor(ids.slice(0, 28)), 'stock-1.csv') });
    expect(sum).toMatchObject({ result: 'published', changes: 2 });
    expect(sc.published().filter((r) => !r.active).map((r) => r.record_id)).toEqual(ids.slice(28));
    const over = await sc.engine.sync(stock, { file: await writeStockFile(sc, stockFor(ids.slice(0, 25)), 'stock-2.csv') });
    expect(over, JSON.stringify([over.guards, over.feed, over.changes])).toMatchObject({ result: 'held', code: 'HELD_GUARD' });
    expect(over.message).toMatch(/missing: deactivate changes 3 records the file does not list \(limit 2, max_deletes\)/);
    expect(sc.published().filter((r) => !r.active)).toHaveLength(2);
  });

  it('set hitting most records is held (by the missing guard and the value guards alike); discarded, nothing of it reaches the state', async () => {
    sc = await scenario({ manualClock: true });
    const ds = withFeeds(sc, { main: CATALOGUE, stock: { ...STOCK, missing: { strategy: 'set', values: { 'attributes.stock': 0 } } } });
    expect((await sc.engine.sync(ds, { file: await sc.writeExport(recs(30), 'catalogue.csv') })).result).toBe('published');
    const stock = feedView(ds, 'stock');
    expect((await sc.engine.sync(stock, { file: await writeStockFile(sc, stockFor(ids), 'stock-0.csv') })).result).toBe('published');
    // A stock file cut short: 3 rows of 30. Setting 27 to 0 is no change a person would want published unseen.
    const sum = await sc.engine.sync(stock, { file: await writeStockFile(sc, stockFor(ids.slice(0, 3)), 'stock-1.csv') });
    expect(sum).toMatchObject({ result: 'held', code: 'HELD_GUARD' });
    expect(sum.message).toMatch(/missing_ratio: missing: set changes 27 of 30 records the file does not list/);
    expect(sum.message).toMatch(/value_zeroed_ratio: attributes.stock is set to zero or empty in 27 of 30 records/);
    expect(stockOf(sc)).toEqual(stockFor(ids));
    expect(await sc.engine.discard(ds)).toMatchObject({ action: 'discarded' });
    expect((await sc.engine.sync(ds, { file: await sc.writeExport(recs(30), 'catalogue-1.csv') })).result).toBe('unchanged');
    expect(stockOf(sc)).toEqual(stockFor(ids));
  });

  it('a held set approved by a person becomes the feed state then, also across a restart: the next catalogue keeps its zeros', async () => {
    const { ds, stock, sc } = await setUp({ strategy: 'set', values: { 'attributes.stock': 0 } }, { guards: { values: [] } });
    expect((await sc.engine.sync(stock, { file: await writeStockFile(sc, stockFor(ids.slice(0, 10)), 'stock-1.csv') })).result).toBe('held');
    sc.restart();
    expect(await sc.engine.approve(ds)).toMatchObject({ action: 'published' });
    const want = { ...stockFor(ids.slice(0, 10)), ...stockFor(ids.slice(10), 0) };
    expect(stockOf(sc)).toEqual(want);
    expect((await sc.engine.sync(ds, { file: await sc.writeExport(recs(30), 'catalogue-1.csv') })).result).toBe('unchanged');
    expect(stockOf(sc)).toEqual(want);
  });
});
