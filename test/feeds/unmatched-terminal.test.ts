import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { planLines } from '../../src/cli/commands/plan.js';
import { syncSummaryLine } from '../../src/cli/commands/sync.js';
import { feedView } from '../../src/feeds/view.js';
import { recs, type Scenario } from '../sync/harness.js';
import { CATALOGUE, STOCK, feedScenario, withFeeds, writeStockFile } from './helpers.js';

/** Issue 13 review (D6): on a terminal, `sync` and `plan` say which rows matched no record and where the reject file lists them. */

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
});

describe('rows matching no record, on a terminal', () => {
  it('sync names them and the reject file it wrote; plan names them and where a sync writes them', async () => {
    const f = await feedScenario(recs(3));
    sc = f.sc;
    const stock = feedView(f.ds, 'stock');
    const file = await writeStockFile(sc, { 'r-001': 3, NOPE1: 1, NOPE2: 2 }, 'um.csv');
    const rejects = join(sc.dir, 'um.rejected.csv');

    const plan = planLines(await sc.engine.plan(stock, file)).join('\n');
    expect(plan).toContain(`2 rows would match no record (first: NOPE1, NOPE2; a sync lists them all in ${rejects})`);

    const sum = await sc.engine.sync(stock, { file });
    expect(sum.result, sum.message ?? '').toBe('published');
    expect(syncSummaryLine(sum)).toMatch(new RegExp(`; 2 rows matched no record \\(first: NOPE1, NOPE2; all in ${rejects.replace(/[.]/g, '\\.')}\\)$`));
    expect(await readFile(rejects, 'utf8')).toMatch(/NOPE1,UNMATCHED_RECORD[\s\S]*NOPE2,UNMATCHED_RECORD/);
  });

  it('past source.max_row_errors_kept the count stays exact, the reject file lists the first ones, and the line says so', async () => {
    const f = await feedScenario(recs(3));
    sc = f.sc;
    const few = withFeeds(sc, { main: CATALOGUE, stock: { ...STOCK, source: { type: 'csv', max_row_errors_kept: 2 } } });
    const file = await writeStockFile(sc, { 'r-001': 3, NOPE1: 1, NOPE2: 2, NOPE3: 3, NOPE4: 4 }, 'many.csv');
    const sum = await sc.engine.sync(feedView(few, 'stock'), { file });
    expect(sum.result, sum.message ?? '').toBe('published');
    expect(sum.feed).toMatchObject({ unmatched: 4, unmatchedListed: 2 });
    const rejects = join(sc.dir, 'many.rejected.csv');
    expect(syncSummaryLine(sum)).toContain(`4 rows matched no record (first: NOPE1, NOPE2 and 2 more; the first 2 (source.max_row_errors_kept) in ${rejects})`);
    expect((await readFile(rejects, 'utf8')).match(/UNMATCHED_RECORD/g)).toHaveLength(2);
  });

  it('says nothing of them when every row matched', async () => {
    const f = await feedScenario(recs(3));
    sc = f.sc;
    const sum = await sc.engine.sync(feedView(f.ds, 'stock'), { file: await writeStockFile(sc, { 'r-001': 3 }, 'ok.csv') });
    expect(syncSummaryLine(sum)).not.toContain('no record');
  });
});
