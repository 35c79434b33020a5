import { afterEach, describe, expect, it } from 'vitest';
import { rec, recs, scenario, type Scenario } from '../sync/harness.js';
import { CATALOGUE, STOCK, withFeeds, writeFileAt } from './helpers.js';

/**
 * Issue 13 review: a plan several files make (the daemon's coalescing) warns
 * of what every file's rows did, each warning naming its own file, not only
 * of the first file.
 */

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
});

describe('a coalesced plan gathers the warnings of every file', () => {
  it('a catalogue, a stock file with an empty cell and a change list deleting a hand-made record: both warnings, each naming its file', async () => {
    sc = await scenario({ manualClock: true, records: [rec('h-001', 'Hand made')] });
    const changes = { role: 'changes', source: { type: 'csv' }, mapping: { fields: { record_id: 'SKU', 'attributes.price': { column: 'Price', transforms: ['integer'] } } }, commands: { column: 'Op' } };
    const ds = withFeeds(sc, { main: CATALOGUE, stock: STOCK, changes });
    const five = recs(5);
    expect((await sc.engine.sync(ds, { file: await sc.writeExport(five, 'cat-0.csv') })).result).toBe('published');
    const cat = await writeFileAt(sc, 'cat-1.csv', ['SKU,Name,Code', ...five.map((r) => `${r.record_id},${r.display_name},${r.api_value}`)], 10);
    const stock = await writeFileAt(sc, 'stock-1.csv', ['SKU,Qty', `${five[0]!.record_id},4`, `${five[1]!.record_id},`], 20);
    const list = await writeFileAt(sc, 'changes-1.csv', ['SKU,Price,Op', 'h-001,0,delete'], 30);
    const sum = await sc.engine.syncFeedFiles(ds, [
      { feed: 'main', file: cat },
      { feed: 'stock', file: stock },
      { feed: 'changes', file: list },
    ]);
    expect(sum.result, sum.message ?? '').toBe('published');
    expect(sum.warnings).toEqual([
      expect.stringMatching(new RegExp(`^1 empty mapped cell in ${stock}: .*\\(feed stock;`)),
      expect.stringMatching(new RegExp(`^1 delete row in ${list} names a record the connector does not own .*h-001 \\(line 2\\)`)),
    ]);
    expect(sc.published().map((r) => r.record_id)).toContain('h-001');
    // The hand-made record is met as not owned, as in a sync of the change list alone, not as a record that does not exist.
    expect(sum.files?.[2]?.matched).toMatchObject({ notOwned: 1, unmatched: 0, deletesNotOwned: 1 });
  });
});
