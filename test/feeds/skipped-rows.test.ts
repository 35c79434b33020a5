import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { feedView } from '../../src/feeds/view.js';
import { recs, scenario, type Scenario } from '../sync/harness.js';
import { CATALOGUE, STOCK, stockOf, withFeeds, writeStockFile } from './helpers.js';

/**
 * Issue 13 review: a row skipped as a row error (on_row_errors: skip_rows) still lists its record, so an
 * update feed's missing strategy must not zero or hide it; a bad row whose record_id cannot be read may be
 * any record's, so the strategy does not run for that file at all.
 */

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
});

const ids = recs(22).map((r) => r.record_id);
const SKIP = { type: 'csv', on_row_errors: 'skip_rows', max_bad_row_ratio: 1 };

/** A catalogue of 22 published and every stock set to 9; the stock feed skips bad rows and sets stock 0 (or deactivates) for records not listed. */
async function setUp(missing: Record<string, unknown>) {
  sc = await scenario({ manualClock: true });
  const ds = withFeeds(sc, { main: CATALOGUE, stock: { ...STOCK, source: SKIP, missing } });
  expect((await sc.engine.sync(ds, { file: await sc.writeExport(recs(22), 'catalogue.csv') })).result).toBe('published');
  const stock = feedView(ds, 'stock');
  expect((await sc.engine.sync(stock, { file: await writeStockFile(sc, Object.fromEntries(ids.map((id) => [id, 9])), 'stock-0.csv') })).result).toBe('published');
  return { ds, stock, sc };
}

/** A stock file listing every record: the first three with a full-width digit (TRANSFORM_FAILED), the rest 50; `extra` lines appended as written. */
async function badStockFile(s: Scenario, name: string, extra: string[] = []): Promise<string> {
  const file = join(s.dir, name);
  const rows = ids.map((id, i) => `${id},${i < 3 ? '５' : '50'}`);
  await writeFile(file, ['SKU,Qty', ...rows, ...extra].join('\n') + '\n');
  return file;
}

const expected = Object.fromEntries(ids.map((id, i) => [id, i < 3 ? 9 : 50]));

describe('rows skipped as row errors and the missing strategy', () => {
  it('set: a record listed only by a skipped row keeps its stock (not zeroed); counted and said in the summary', async () => {
    const { stock, sc } = await setUp({ strategy: 'set', values: { 'attributes.stock': 0 } });
    const sum = await sc.engine.sync(stock, { file: await badStockFile(sc, 'stock-1.csv') });
    expect(sum.result, sum.message ?? '').toBe('published');
    expect(stockOf(sc)).toEqual(expected);
    expect(sum.feed).toMatchObject({ matched: 19, missing: 0, skippedListed: 3, missingNotRun: 0 });
    expect(sum.warnings.join('\n')).toMatch(/3 records listed in .*stock-1\.csv only by rows skipped as row errors: left as they were/);
  });

  it('deactivate: a record listed only by a skipped row stays active', async () => {
    const { stock, sc } = await setUp({ strategy: 'deactivate' });
    const sum = await sc.engine.sync(stock, { file: await badStockFile(sc, 'stock-1.csv') });
    expect(sum.result, sum.message ?? '').toBe('published');
    expect(sc.published().filter((r) => !r.active).map((r) => r.record_id)).toEqual([]);
    expect(stockOf(sc)).toEqual(expected);
  });

  it('a bad row without a readable record_id: the missing strategy does not run for the file (nothing zeroed); said in the summary', async () => {
    const { stock, sc } = await setUp({ strategy: 'set', values: { 'attributes.stock': 0 } });
    // The file leaves out the last record and has a row whose SKU cell is empty (no readable id): it could be that record's.
    const file = join(sc.dir, 'stock-1.csv');
    await writeFile(file, ['SKU,Qty', ...ids.slice(0, 21).map((id) => `${id},50`), ',50'].join('\n') + '\n');
    const sum = await sc.engine.sync(stock, { file });
    expect(sum.result, sum.message ?? '').toBe('published');
    expect(stockOf(sc)).toEqual({ ...Object.fromEntries(ids.slice(0, 21).map((id) => [id, 50])), [ids[21]!]: 9 });
    expect(sum.feed).toMatchObject({ missing: 0, missingNotRun: 1 });
    expect(sum.warnings.join('\n')).toMatch(/the missing strategy of feed stock did not run for .*stock-1\.csv: 1 row skipped as row errors has no readable record_id/);
  });

  it('a batch (catalogue and the stock file as one plan) keeps the skipped rows\' records the same way', async () => {
    const { ds, sc } = await setUp({ strategy: 'set', values: { 'attributes.stock': 0 } });
    const cat = await sc.writeExport(recs(22), 'catalogue-1.csv');
    const sum = await sc.engine.syncFeedFiles(ds, [
      { file: cat, feed: 'main' },
      { file: await badStockFile(sc, 'stock-1.csv'), feed: 'stock' },
    ]);
    expect(sum.result, sum.message ?? '').toBe('published');
    expect(stockOf(sc)).toEqual(expected);
    expect(sum.files?.find((f) => f.feed === 'stock')?.matched).toMatchObject({ skippedListed: 3, missing: 0 });
  });
});
