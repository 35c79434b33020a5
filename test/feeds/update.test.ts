import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { feedView } from '../../src/feeds/view.js';
import { why, whyLines } from '../../src/history/why.js';
import { rejectFilePath } from '../../src/sources/reject-file.js';
import { rec, recs, scenario, type Scenario } from '../sync/harness.js';
import { CATALOGUE, feedScenario, STOCK, stockOf, withFeeds, writeStockFile } from './helpers.js';

/** Issue 13: an update feed (stock only) beside the full catalogue, against the emulator over real HTTP. */

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
});

const stock30 = (q: (i: number) => number) => Object.fromEntries(recs(30).map((r, i) => [r.record_id, q(i)]));

describe('update feed: stock only', () => {
  it('sets only stock of the records it lists; unknown SKUs are counted, listed in the summary and the reject file, not errors', async () => {
    const f = await feedScenario(recs(30));
    sc = f.sc;
    const before = sc.published();
    const file = await writeStockFile(sc, { 'r-002': 5, 'r-004': 7, 'r-404': 1, 'r-405': 2 }, 'stock-1.csv');
    const sum = await sc.engine.sync(feedView(f.ds, 'stock'), { file });
    expect(sum).toMatchObject({ result: 'published', adds: 0, changes: 2, deletes: 0, rowErrors: 0 });
    expect(sum.feed).toEqual({ name: 'stock', role: 'update', matched: 2, unmatched: 2, firstUnmatched: ['r-404', 'r-405'], notOwned: 0, changeable: 30, missing: 0, fieldsChanged: 2, blankCells: 0, skippedListed: 0, missingNotRun: 0 });
    const after = new Map(sc.published().map((r) => [r.record_id, r]));
    for (const r of before) {
      const stock = r.record_id === 'r-002' ? 5 : r.record_id === 'r-004' ? 7 : undefined;
      expect(after.get(r.record_id)).toEqual(stock === undefined ? r : { ...r, attributes: { stock } });
    }
    // why names the feed, its file and line (provenance, issue 14).
    const stock = why(sc.db.conn, 'shop-1', 'r-004').fields.find((x) => x.field === 'attributes.stock')!;
    expect(stock.set).toMatchObject({ feed: 'stock', file, line: 3 });
    expect(whyLines(why(sc.db.conn, 'shop-1', 'r-004')).join('\n')).toContain(`feed stock: ${file} line 3`);
    const rejects = await readFile(rejectFilePath(file), 'utf8');
    expect(rejects).toContain('4,record_id,r-404,UNMATCHED_RECORD');
    expect(rejects).toContain('5,record_id,r-405,UNMATCHED_RECORD');
  });

  it('a catalogue export after a stock update keeps the stock; so does one after a restart (a new engine on the same state dir)', async () => {
    const f = await feedScenario(recs(30));
    sc = f.sc;
    expect((await sc.engine.sync(feedView(f.ds, 'stock'), { file: await writeStockFile(sc, stock30((i) => i + 1), 'stock-1.csv') })).result).toBe('published');
    const renamed = recs(30).map((r) => (r.record_id === 'r-003' ? { ...r, display_name: 'Renamed' } : r));
    const cat = await sc.engine.sync(f.ds, { file: await sc.writeExport(renamed, 'catalogue-1.csv') });
    expect(cat).toMatchObject({ result: 'published', changes: 1, adds: 0, deletes: 0 });
    expect(stockOf(sc)).toEqual(stock30((i) => i + 1));
    sc.restart();
    const again = await sc.engine.sync(f.ds, { file: await sc.writeExport(recs(31), 'catalogue-2.csv') });
    expect(again).toMatchObject({ result: 'published', changes: 1, adds: 1, deletes: 0 });
    expect(stockOf(sc)).toEqual({ ...stock30((i) => i + 1), 'r-031': undefined });
  });

  it('a stock file that zeroes every stock is held by the value guards; discard, then a catalogue does not bring it back', async () => {
    const f = await feedScenario(recs(30));
    sc = f.sc;
    const stock = feedView(f.ds, 'stock');
    expect((await sc.engine.sync(stock, { file: await writeStockFile(sc, stock30((i) => i + 1), 'stock-1.csv') })).result).toBe('published');
    const zero = await sc.engine.sync(stock, { file: await writeStockFile(sc, stock30(() => 0), 'stock-2.csv') });
    expect(zero).toMatchObject({ result: 'held', code: 'HELD_GUARD' });
    expect(zero.message).toContain('value_zeroed_ratio');
    expect(stockOf(sc)).toEqual(stock30((i) => i + 1));
    expect(await sc.engine.discard(f.ds)).toMatchObject({ action: 'discarded' });
    const cat = await sc.engine.sync(f.ds, { file: await sc.writeExport(recs(30), 'catalogue-1.csv') });
    expect(cat.result).toBe('unchanged');
    expect(stockOf(sc)).toEqual(stock30((i) => i + 1));
  });

  it("a held change of one feed is not discarded by a file of another: that file waits; a newer file of the same feed supersedes it", async () => {
    const f = await feedScenario(recs(30));
    sc = f.sc;
    const stock = feedView(f.ds, 'stock');
    expect((await sc.engine.sync(stock, { file: await writeStockFile(sc, stock30((i) => i + 1), 'stock-1.csv') })).result).toBe('published');
    expect((await sc.engine.sync(stock, { file: await writeStockFile(sc, stock30(() => 0), 'stock-2.csv') })).result).toBe('held');
    const held = sc.db.snapshot('shop-1').held();
    const cat = await sc.engine.sync(f.ds, { file: await sc.writeExport(recs(31), 'catalogue-1.csv') });
    expect(cat).toMatchObject({ result: 'waiting', code: 'HELD_OTHER_FEED' });
    expect(cat.message).toMatch(/a change of feed "stock" waits for a person .*approve .*discard .*this file of feed "main" is kept/);
    expect(sc.db.snapshot('shop-1').held()).toEqual(held);
    const planned = await sc.engine.plan(f.ds, await sc.writeExport(recs(31), 'catalogue-2.csv'));
    expect(planned.stopped).toMatchObject({ code: 'HELD_OTHER_FEED' });
    // The same feed's newer file replaces the held change, as a newer export does today.
    const next = await sc.engine.sync(stock, { file: await writeStockFile(sc, stock30((i) => i + 2), 'stock-3.csv') });
    expect(next.result).toBe('published');
    expect(stockOf(sc)).toEqual(stock30((i) => i + 2));
    expect((await sc.engine.sync(f.ds, { file: await sc.writeExport(recs(31), 'catalogue-3.csv') })).result).toBe('published');
    expect(stockOf(sc)).toEqual({ ...stock30((i) => i + 2), 'r-031': undefined });
  });

  it("a stock file sent whole by replace says why it is not uploaded: the feed's records are merged, not a field the feed does not map", async () => {
    const f = await feedScenario(recs(10), { policy: { replace: { max_per_record_changes: 0, prefer_import: true } } });
    sc = f.sc;
    const sum = await sc.engine.sync(feedView(f.ds, 'stock'), { file: await writeStockFile(sc, stock30((i) => i + 1), 'stock-1.csv') });
    expect(sum).toMatchObject({ result: 'published', path: 'replace', changes: 10 });
    expect(sum.pathReason).toContain("PUT /records, not an upload: feed stock's records are merged with the dataset's other feeds");
    expect(sum.pathReason).not.toContain('display_name');
  });

  it('rows of records the connector does not own (made by hand) are left alone and counted', async () => {
    const f = await feedScenario(recs(5), {}, [rec('h-001', 'Hand made')]);
    sc = f.sc;
    const sum = await sc.engine.sync(feedView(f.ds, 'stock'), { file: await writeStockFile(sc, { 'h-001': 9, 'r-001': 3 }, 'stock-1.csv') });
    expect(sum).toMatchObject({ result: 'published', changes: 1 });
    expect(sum.feed).toMatchObject({ matched: 1, unmatched: 0, notOwned: 1 });
    expect(sc.published().find((r) => r.record_id === 'h-001')).toEqual(rec('h-001', 'Hand made'));
    expect(stockOf(sc)['r-001']).toBe(3);
  });
  it("a stock file of a few rows is no catalogue: the row-drop guard does not hold it, and the next catalogue is compared with the last catalogue", async () => {
    const f = await feedScenario(recs(30), { policy: { guards: { max_row_drop_ratio: 0.1 } } });
    sc = f.sc;
    // Taught first: the key shows it stages, so the draft's own guard check (publish.ts) runs too.
    const sum = await sc.engine.sync(feedView(f.ds, 'stock'), { file: await writeStockFile(sc, { 'r-001': 1, 'r-002': 2 }, 'stock-1.csv') });
    expect(sum).toMatchObject({ result: 'published', changes: 2 });
    const again = await sc.engine.sync(feedView(f.ds, 'stock'), { file: await writeStockFile(sc, { 'r-001': 3 }, 'stock-2.csv') });
    expect(again).toMatchObject({ result: 'published', changes: 1 });
    expect(sc.db.snapshot('shop-1').info().lastSource?.rowCount).toBe(30);
  });

  it('an empty Qty cell is no value: the stock is left as it is, counted and said in the summary; empty_clears makes it clear', async () => {
    const f = await feedScenario(recs(5));
    sc = f.sc;
    expect((await sc.engine.sync(feedView(f.ds, 'stock'), { file: await writeStockFile(sc, { 'r-001': 3, 'r-002': 4 }, 'stock-1.csv') })).result).toBe('published');
    const file = join(sc.dir, 'stock-2.csv');
    await writeFile(file, 'SKU,Qty\nr-001,\nr-002,7\n');
    const sum = await sc.engine.sync(feedView(f.ds, 'stock'), { file });
    expect(sum).toMatchObject({ result: 'published', changes: 1, rowErrors: 0 });
    expect(sum.feed).toMatchObject({ matched: 2, fieldsChanged: 1, blankCells: 1 });
    expect(sum.warnings).toContainEqual(expect.stringMatching(/^1 empty mapped cell in .*stock-2\.csv: no value, so its field was left as it was \(feed stock; empty_clears/));
    expect(stockOf(sc)).toMatchObject({ 'r-001': 3, 'r-002': 7 });
    // The stock feed's state keeps 3: a catalogue does not bring an empty stock.
    expect((await sc.engine.sync(f.ds, { file: await sc.writeExport(recs(5), 'catalogue-1.csv') })).result).toBe('unchanged');
    const clears = withFeeds(sc, { main: CATALOGUE, stock: { ...STOCK, empty_clears: ['attributes.stock'] } });
    const clearing = join(sc.dir, 'stock-3.csv');
    await writeFile(clearing, 'SKU,Qty\nr-001,\n');
    const cleared = await sc.engine.sync(feedView(clears, 'stock'), { file: clearing });
    expect(cleared).toMatchObject({ result: 'published', changes: 1 });
    expect(cleared.feed).toMatchObject({ blankCells: 0 });
    expect(stockOf(sc)['r-001']).toBeNull();
  });

  // Review of #13 (rv13b, D4): a shop whose catalogue is kept in the portal (or by another tool) and that feeds only
  // its stock: every row's record exists but is not the connector's, so nothing is set, and the sync ended
  // "unchanged" with no warning (the CLI printed "0 changed", exit 0), the rows counted in feed.notOwned only.
  it('an update feed whose every row names a record the connector does not own says so in the summary\'s warnings', async () => {
    sc = await scenario({ manualClock: true, records: [rec('h-001', 'Tea'), rec('h-002', 'Coffee')] });
    const ds = withFeeds(sc, { stock: STOCK });
    const sum = await sc.engine.sync(feedView(ds, 'stock'), { file: await writeStockFile(sc, { 'h-001': 9, 'h-002': 4 }, 'stock-1.csv') });
    expect(sum).toMatchObject({ result: 'unchanged', changes: 0, feed: { matched: 0, notOwned: 2 } });
    expect(sc.published().map((r) => r.attributes.stock)).toEqual([undefined, undefined]);
    expect(sum.feed?.firstNotOwned).toEqual(['h-001', 'h-002']);
    expect(sum.warnings).toHaveLength(1);
    expect(sum.warnings[0]).toMatch(/^2 rows in .*stock-1\.csv name records the connector does not own .*: h-001, h-002 \(feed stock; policy\.ownership: full .*README "Ownership"/);
    // The log says it at warn level: a terminal's progress lines print it, as a daemon's journal has it.
    const logged = sc.logs.filter((l) => l.event === 'feed.not_owned');
    expect(logged).toMatchObject([{ level: 40, feed: 'stock', not_owned: 2, first: ['h-001', 'h-002'], msg: sum.warnings[0] }]);
  });
});
