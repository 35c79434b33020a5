import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { feedView } from '../../src/feeds/view.js';
import { recs, scenario, type Scenario } from '../sync/harness.js';
import { CATALOGUE, STOCK, stockOf, withFeeds, writeStockFile } from './helpers.js';

/**
 * Issue 13: the feed state keeps what a missing-record strategy did (set's values, the records deactivate
 * holds hidden), so the full feed's next export neither brings back what it replaced nor shows hidden records,
 * also after a restart; a record listed again comes back to what the catalogue says.
 */

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
});

const ids = recs(20).map((r) => r.record_id);
const stockFor = (list: string[], q: number) => Object.fromEntries(list.map((id) => [id, q]));
const inactive = (s: Scenario) => s.published().filter((r) => !r.active).map((r) => r.record_id);

/** A catalogue of 20 published, then a stock file listing all of them (stock 5); the stock feed's missing strategy is `missing`. */
async function setUp(missing: Record<string, unknown>, main: Record<string, unknown> = CATALOGUE) {
  // Value guards off: these tests are about the state; the guards of a missing strategy have their own tests.
  sc = await scenario({ manualClock: true, policy: { guards: { values: [], max_delete_ratio: 0.4 } } });
  const ds = withFeeds(sc, { main, stock: { ...STOCK, missing } });
  expect((await sc.engine.sync(ds, { file: await sc.writeExport(recs(20), 'catalogue-0.csv') })).result).toBe('published');
  const stock = feedView(ds, 'stock');
  expect((await sc.engine.sync(stock, { file: await writeStockFile(sc, stockFor(ids, 5), 'stock-0.csv') })).result).toBe('published');
  return { ds, stock, sc };
}

describe('feed state of a missing-record strategy beside the full feed', () => {
  it('set: a catalogue export after the stock file keeps stock 0 for the records the stock file did not list, also after a restart', async () => {
    const { ds, stock, sc } = await setUp({ strategy: 'set', values: { 'attributes.stock': 0 } });
    expect((await sc.engine.sync(stock, { file: await writeStockFile(sc, stockFor(ids.slice(0, 16), 6), 'stock-1.csv') })).result).toBe('published');
    const want = { ...stockFor(ids.slice(0, 16), 6), ...stockFor(ids.slice(16), 0) };
    expect(stockOf(sc)).toEqual(want);
    // Before the fix the state knew only stock 5 of the last file listing r-017..r-020: the catalogue brought it back.
    const renamed = recs(20).map((r) => (r.record_id === 'r-001' ? { ...r, display_name: 'Renamed' } : r));
    expect(await sc.engine.sync(ds, { file: await sc.writeExport(renamed, 'catalogue-1.csv') })).toMatchObject({ result: 'published', changes: 1 });
    expect(stockOf(sc)).toEqual(want);
    sc.restart();
    expect((await sc.engine.sync(ds, { file: await sc.writeExport(renamed, 'catalogue-2.csv') })).result).toBe('unchanged');
    expect(stockOf(sc)).toEqual(want);
    // The stock file lists r-017 again: its value, not the strategy's, is the feed's now.
    expect((await sc.engine.sync(stock, { file: await writeStockFile(sc, stockFor(ids.slice(0, 17), 6), 'stock-2.csv') })).result).toBe('published');
    expect((await sc.engine.sync(ds, { file: await sc.writeExport(recs(20), 'catalogue-3.csv') })).result).toBe('published');
    expect(stockOf(sc)).toEqual({ ...stockFor(ids.slice(0, 17), 6), ...stockFor(ids.slice(17), 0) });
  });

  it('deactivate: a record the stock file does not list stays hidden after catalogue syncs and a restart; listed again it comes back (active true by default)', async () => {
    const { ds, stock, sc } = await setUp({ strategy: 'deactivate' });
    expect((await sc.engine.sync(stock, { file: await writeStockFile(sc, stockFor(ids.slice(0, 18), 5), 'stock-1.csv') })).result).toBe('published');
    expect(inactive(sc)).toEqual(ids.slice(18));
    expect(await sc.engine.sync(ds, { file: await sc.writeExport(recs(21), 'catalogue-1.csv') })).toMatchObject({ result: 'published', adds: 1, changes: 0 });
    expect(inactive(sc)).toEqual(ids.slice(18));
    sc.restart();
    expect((await sc.engine.sync(ds, { file: await sc.writeExport(recs(21), 'catalogue-2.csv') })).result).toBe('unchanged');
    expect(inactive(sc)).toEqual(ids.slice(18));
    // r-019 listed again: active again, as the catalogue has it; r-020 and the new r-021 (not listed) hidden.
    const back = await sc.engine.sync(stock, { file: await writeStockFile(sc, stockFor(ids.slice(0, 19), 5), 'stock-2.csv') });
    expect(back).toMatchObject({ result: 'published', changes: 2 });
    expect(back.feed).toMatchObject({ matched: 19, missing: 1, fieldsChanged: 2 });
    expect(inactive(sc)).toEqual(['r-020', 'r-021']);
    expect((await sc.engine.sync(ds, { file: await sc.writeExport(recs(21), 'catalogue-3.csv') })).result).toBe('unchanged');
    expect(inactive(sc)).toEqual(['r-020', 'r-021']);
  });

  it('deactivate: a record listed again comes back to the catalogue\'s active, which may be false', async () => {
    const withActive = { ...CATALOGUE, mapping: { fields: { ...CATALOGUE.mapping.fields, active: 'Active' } } };
    const cat = async (s: Scenario, off: string[], name: string) => {
      const file = join(s.dir, name);
      await writeFile(file, ['SKU,Name,Code,Active', ...recs(20).map((r) => `${r.record_id},${r.display_name},${r.api_value},${off.includes(r.record_id) ? 'no' : 'yes'}`)].join('\n') + '\n');
      return file;
    };
    sc = await scenario({ manualClock: true, policy: { guards: { values: [], max_delete_ratio: 0.4 } } });
    const ds = withFeeds(sc, { main: withActive, stock: { ...STOCK, missing: { strategy: 'deactivate' } } });
    const stock = feedView(ds, 'stock');
    expect((await sc.engine.sync(ds, { file: await cat(sc, ['r-020'], 'catalogue-0.csv') })).result).toBe('published');
    expect((await sc.engine.sync(stock, { file: await writeStockFile(sc, stockFor(ids.slice(0, 18), 5), 'stock-1.csv') })).result).toBe('published');
    expect(inactive(sc)).toEqual(['r-019', 'r-020']);
    // The catalogue says active for r-019: the stock feed still holds it hidden.
    expect((await sc.engine.sync(ds, { file: await cat(sc, ['r-020'], 'catalogue-1.csv') })).result).toBe('unchanged');
    sc.restart();
    expect((await sc.engine.sync(stock, { file: await writeStockFile(sc, stockFor(ids, 5), 'stock-2.csv') })).result).toBe('published');
    expect(inactive(sc)).toEqual(['r-020']);
  });
});
