import { afterEach, describe, expect, it } from 'vitest';
import { DaemonMetrics } from '../../src/daemon/metrics.js';
import { recs, scenario, type Scenario } from '../sync/harness.js';
import { CATALOGUE, STOCK, withFeeds, writeFileAt } from './helpers.js';

/**
 * Issue 13 review (D5): a plan several files make counts each feed over all
 * of its files, in the summary and in /metrics, not only the first file.
 */

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
});

describe('a coalesced plan counts every file of each feed', () => {
  it('two stock files: the summary feed is their sum, consistent with files; metrics count both', async () => {
    sc = await scenario({ manualClock: true });
    const ds = withFeeds(sc, { main: CATALOGUE, stock: STOCK });
    const five = recs(5);
    expect((await sc.engine.sync(ds, { file: await sc.writeExport(five, 'cat-0.csv') })).result).toBe('published');
    const ids = five.map((r) => r.record_id);
    const s1 = await writeFileAt(sc, 'stock-1.csv', ['SKU,Qty', `${ids[0]},4`, `${ids[1]},5`, 'NOPE1,1'], 10);
    const s2 = await writeFileAt(sc, 'stock-2.csv', ['SKU,Qty', `${ids[2]},6`, `${ids[3]},7`, `${ids[4]},8`, 'NOPE2,1'], 20);
    const sum = await sc.engine.syncFeedFiles(ds, [
      { feed: 'stock', file: s1 },
      { feed: 'stock', file: s2 },
    ]);
    expect(sum.result, sum.message ?? '').toBe('published');
    expect(sum.files?.map((f) => f.matched?.matched)).toEqual([2, 3]);
    expect(sum.feed).toMatchObject({ name: 'stock', matched: 5, unmatched: 2, fieldsChanged: 5, firstUnmatched: ['NOPE1', 'NOPE2'] });
    expect(sum.feeds).toEqual([expect.objectContaining({ name: 'stock', matched: 5, unmatched: 2, rows: 7 })]);

    const m = new DaemonMetrics();
    m.recordSync(sum, Date.now());
    const text = await m.registry.metrics();
    expect(text).toContain('dataset_connector_feed_rows_total{dataset="shop-1",feed="stock",kind="read"} 7');
    expect(text).toContain('dataset_connector_feed_rows_total{dataset="shop-1",feed="stock",kind="matched"} 5');
    expect(text).toContain('dataset_connector_feed_rows_total{dataset="shop-1",feed="stock",kind="unmatched"} 2');
    expect(text).toContain('dataset_connector_feed_fields_changed_total{dataset="shop-1",feed="stock"} 5');
  });

  it('a catalogue and a stock file: each feed is counted with its own labels and rows', async () => {
    sc = await scenario({ manualClock: true });
    const ds = withFeeds(sc, { main: CATALOGUE, stock: STOCK });
    const five = recs(5);
    expect((await sc.engine.sync(ds, { file: await sc.writeExport(five, 'cat-0.csv') })).result).toBe('published');
    const cat = await writeFileAt(sc, 'cat-1.csv', ['SKU,Name,Code', ...five.map((r) => `${r.record_id},${r.display_name},${r.api_value}`)], 10);
    const stock = await writeFileAt(sc, 'stock-1.csv', ['SKU,Qty', `${five[0]!.record_id},4`, `${five[1]!.record_id},9`], 20);
    const sum = await sc.engine.syncFeedFiles(ds, [
      { feed: 'main', file: cat },
      { feed: 'stock', file: stock },
    ]);
    expect(sum.result, sum.message ?? '').toBe('published');
    expect(sum.feeds?.map((f) => [f.name, f.rows, f.matched])).toEqual([
      ['main', 5, 5],
      ['stock', 2, 2],
    ]);
    const m = new DaemonMetrics();
    m.recordSync(sum, Date.now());
    const text = await m.registry.metrics();
    expect(text).toContain('dataset_connector_feed_syncs_total{dataset="shop-1",feed="main",outcome="published"} 1');
    expect(text).toContain('dataset_connector_feed_syncs_total{dataset="shop-1",feed="stock",outcome="published"} 1');
    expect(text).toContain('dataset_connector_feed_rows_total{dataset="shop-1",feed="main",kind="read"} 5');
    expect(text).toContain('dataset_connector_feed_rows_total{dataset="shop-1",feed="stock",kind="read"} 2');
    expect(text).toContain('dataset_connector_feed_rows_total{dataset="shop-1",feed="stock",kind="matched"} 2');
    expect(text).toContain('dataset_connector_feed_fields_changed_total{dataset="shop-1",feed="stock"} 2');
  });
  it('files of two feeds waiting behind another feed\'s held change (HELD_OTHER_FEED): each feed counted, outcome waiting, nothing merged', async () => {
    sc = await scenario({ manualClock: true });
    const PRICE = { role: 'update', source: { type: 'csv' }, mapping: { fields: { record_id: 'SKU', 'attributes.price': { column: 'Price', transforms: ['integer'] } } } };
    const ds = withFeeds(sc, { main: CATALOGUE, stock: STOCK, prices: PRICE }, { policy: { ...sc.ds.policy, guards: { ...sc.ds.policy.guards, max_delete_ratio: 0.4 } } });
    const five = recs(5);
    expect((await sc.engine.sync(ds, { file: await sc.writeExport(five, 'cat-0.csv') })).result).toBe('published');
    // Four of five records gone: held for a person.
    expect((await sc.engine.sync(ds, { file: await sc.writeExport(five.slice(0, 1), 'cat-1.csv') })).result).toBe('held');
    const stock = await writeFileAt(sc, 'stock-1.csv', ['SKU,Qty', `${five[0]!.record_id},4`, `${five[1]!.record_id},9`], 10);
    const prices = await writeFileAt(sc, 'prices-1.csv', ['SKU,Price', `${five[2]!.record_id},120`], 20);
    const sum = await sc.engine.syncFeedFiles(ds, [
      { feed: 'stock', file: stock },
      { feed: 'prices', file: prices },
    ]);
    expect(sum).toMatchObject({ result: 'waiting', code: 'HELD_OTHER_FEED' });
    expect(sum.feeds?.map((f) => [f.name, f.rows, f.matched, f.unmatched, f.fieldsChanged])).toEqual([
      ['stock', 2, 0, 0, 0],
      ['prices', 1, 0, 0, 0],
    ]);
    const m = new DaemonMetrics();
    m.recordSync(sum, Date.now());
    const text = await m.registry.metrics();
    expect(text).toContain('dataset_connector_feed_syncs_total{dataset="shop-1",feed="stock",outcome="waiting"} 1');
    expect(text).toContain('dataset_connector_feed_syncs_total{dataset="shop-1",feed="prices",outcome="waiting"} 1');
    expect(text).not.toContain('kind="matched"');
  });
});
