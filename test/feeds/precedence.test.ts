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
});
