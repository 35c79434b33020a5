import { utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { DatasetConfig } from '../../src/config/schema.js';
import { feedView } from '../../src/feeds/view.js';
import { recs, scenario, type Scenario } from '../sync/harness.js';
import { CATALOGUE, STOCK, withFeeds, writeStockFile } from './helpers.js';

/**
 * Issue 13: a plan several files make (the daemon's coalescing, engine.syncFeedFiles) publishes the records
 * AND records the feed state that syncing the same files one after another would: each file merged with the
 * state the files before it leave (precedence and newest by each file's time, a missing strategy's values and
 * a deactivating feed's claims recorded, the last file's claims winning).
 */

const open: Scenario[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

const T0 = Date.UTC(2026, 0, 5, 9, 0, 0);
const N = 30;
const ids = recs(N).map((r) => r.record_id);
const WITH_STOCK = { ...CATALOGUE, mapping: { fields: { ...CATALOGUE.mapping.fields, 'attributes.stock': { column: 'Stock', transforms: ['integer'] } } } };

async function at(file: string, s: number): Promise<string> {
  await utimes(file, new Date(T0 + s * 1000), new Date(T0 + s * 1000));
  return file;
}

async function catalogue(sc: Scenario, stock: number, name: string, s: number): Promise<string> {
  const file = join(sc.dir, name);
  await writeFile(file, ['SKU,Name,Code,Stock', ...recs(N).map((r) => `${r.record_id},${r.display_name},${r.api_value},${stock}`)].join('\n') + '\n');
  return at(file, s);
}

const stockFile = async (sc: Scenario, list: string[], q: number, name: string, s: number) => at(await writeStockFile(sc, Object.fromEntries(list.map((id) => [id, q])), name), s);

/** The files of one burst: a newer catalogue, a stock file older than it, a stock file newer than it (each listing fewer records). */
async function burst(sc: Scenario): Promise<Array<{ feed: string; file: string }>> {
  return [
    { feed: 'main', file: await catalogue(sc, 2, 'cat-1.csv', 100) },
    { feed: 'stock', file: await stockFile(sc, ids.slice(0, 27), 50, 'stock-a.csv', 50) },
    { feed: 'stock', file: await stockFile(sc, [...ids.slice(0, 25), ids[27]!], 70, 'stock-b.csv', 150) },
  ];
}

/** A scenario with the catalogue (stock 1, time 0) published; `stock` is the stock feed's config. */
async function setUp(stock: Record<string, unknown>): Promise<{ sc: Scenario; ds: DatasetConfig }> {
  const sc = await scenario({ manualClock: true, policy: { guards: { values: [], max_delete_ratio: 0.4 } } });
  open.push(sc);
  const ds = withFeeds(sc, { main: WITH_STOCK, stock: { ...STOCK, ...stock } }, { precedence: { 'attributes.stock': 'newest' } });
  expect((await sc.engine.sync(ds, { file: await catalogue(sc, 1, 'cat-0.csv', 0) })).result).toBe('published');
  return { sc, ds };
}

/** What the state db holds of the feeds: every value with its feed, time, line and file content, and each feed's last file. */
function stateOf(sc: Scenario): unknown {
  const conn = sc.db.conn;
  return {
    values: conn.prepare('SELECT record_id, field, feed, value, at, line, sha256 FROM feed_values ORDER BY record_id, field, feed').all(),
    files: conn.prepare('SELECT feed, sha256, at FROM feed_files ORDER BY feed').all(),
  };
}

const recordsOf = (sc: Scenario) => sc.published().map((r) => ({ id: r.record_id, stock: r.attributes.stock, active: r.active }));

/** The burst synced one file at a time, and the same burst as one plan: records and feed state compared after it, and after a later catalogue. */
async function bothWays(stock: Record<string, unknown>): Promise<{ one: Scenario; batch: Scenario }> {
  const a = await setUp(stock);
  for (const f of await burst(a.sc)) {
    const sum = await a.sc.engine.sync(feedView(a.ds, f.feed), { file: f.file });
    // The older stock file changes nothing under newest (the catalogue's 2s win): its state is recorded all the same.
    expect(sum.result, `${f.file}: ${sum.message}`).toMatch(/^(published|unchanged)$/);
  }
  const b = await setUp(stock);
  const sum = await b.sc.engine.syncFeedFiles(b.ds, await burst(b.sc));
  expect(sum.result, sum.message ?? '').toBe('published');
  expect(sum.files?.map((f) => f.outcome)).toEqual(['planned', 'planned', 'planned']);

  expect(recordsOf(b.sc)).toEqual(recordsOf(a.sc));
  expect(stateOf(b.sc)).toEqual(stateOf(a.sc));
  // A catalogue written between the two stock files: what wins depends on the state the burst left.
  for (const s of [a.sc, b.sc]) await s.engine.sync(s === a.sc ? a.ds : b.ds, { file: await catalogue(s, 3, 'cat-2.csv', 120) });
  expect(recordsOf(b.sc)).toEqual(recordsOf(a.sc));
  expect(stateOf(b.sc)).toEqual(stateOf(a.sc));
  return { one: a.sc, batch: b.sc };
}

const stockState = (sc: Scenario, field: string) =>
  Object.fromEntries((sc.db.conn.prepare("SELECT record_id, value, at FROM feed_values WHERE feed = 'stock' AND field = ? ORDER BY record_id").all(field) as Array<{ record_id: string; value: string; at: number }>).map((v) => [v.record_id, [JSON.parse(v.value), (v.at - T0) / 1000]]));

describe('a plan of several files records the feed state of syncing them one at a time', () => {
  it('missing: set and precedence newest: the stock feed keeps its own values (a losing one too) and the values the strategy set, each at its file time', async () => {
    const { batch } = await bothWays({ missing: { strategy: 'set', values: { 'attributes.stock': 0 } } });
    // The last stock file (time 150) listed r-001..r-025 and r-028; the others it set to 0.
    const expected = Object.fromEntries(ids.map((id, i) => [id, [i < 25 || i === 27 ? 70 : 0, 150]]));
    expect(stockState(batch, 'attributes.stock')).toEqual(expected);
    // The catalogue at 120 is older than the stock file's values, its 0s included: the stock stays.
    expect(Object.fromEntries(batch.published().map((r) => [r.record_id, r.attributes.stock]))).toEqual(Object.fromEntries(ids.map((id, i) => [id, expected[id]![0]])));
  });

  it('missing: deactivate: the last stock file\'s unlisted records are the feed\'s claims, not the first\'s', async () => {
    const { batch } = await bothWays({ missing: { strategy: 'deactivate' } });
    expect(Object.keys(stockState(batch, '@hidden'))).toEqual([...ids.slice(25, 27), ...ids.slice(28)]);
    expect(batch.published().filter((r) => !r.active).map((r) => r.record_id)).toEqual([...ids.slice(25, 27), ...ids.slice(28)]);
  });
});
