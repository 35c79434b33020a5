import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { configSchema, type DatasetConfig } from '../../src/config/schema.js';
import { feedView } from '../../src/feeds/view.js';
import { CATALOGUE } from './helpers.js';
import { scenario, type Scenario } from '../sync/harness.js';

/**
 * Issue 13 review (D8): a fan-out feed's rows that take none of a file's rows
 * (a spreadsheet wrote store 000 as 0) say why, beside the empty_result hold:
 * the setting, the value asked for, and the first values the column held.
 */

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
});

describe('a feed\'s rows that take no row of the file', () => {
  it('the summary, the held message and the plan name feeds.<feed>.rows and the values seen (bounded)', async () => {
    sc = await scenario({ manualClock: true });
    const parsed = configSchema.parse({
      exports: { ho: { source: { type: 'csv' }, schedules: [{ type: 'reread', path: join(sc.dir, 'ho.csv'), cron: '0 * * * *' }] } },
      datasets: {
        'store-000': {
          api: { base_url: sc.ds.api.base_url, key: { env: 'UNUSED' } },
          feeds: { stock: { role: 'full', from: 'ho', rows: { column: 'Store', equals: '000' }, mapping: CATALOGUE.mapping } },
        },
      },
    });
    const ds = feedView({ ...parsed.datasets['store-000']!, name: sc.ds.name, file: sc.ds.file, api: sc.ds.api } as DatasetConfig, 'stock');
    const file = join(sc.dir, 'ho.csv');
    await writeFile(file, 'Store,SKU,Name,Code\n000,A1,Apple,a1\n000,B2,Banana,b2\n001,C3,Cherry,c3\n');
    const first = await sc.engine.sync(ds, { file });
    expect(first.result).toBe('published');
    expect(first.warnings).toEqual([]);

    // Saved from Excel: the store codes lost their zeros; and more distinct values than are shown.
    const stores = ['0', '1', '0', '2', '3', '4', '5', '6'];
    await writeFile(file, `Store,SKU,Name,Code\n${stores.map((st, i) => `${st},A${i},Apple,a${i}\n`).join('')}`);
    const note = `rows: Store equals "000" took 0 of 8 rows of ${file} (values seen: 0, 1, 2, 3, 4, …): dataset store-000 gets none of them; write feeds.stock.rows.equals`;
    const plan = await sc.engine.plan(ds, file);
    expect(plan.warnings).toEqual([expect.stringContaining(note)]);
    const held = await sc.engine.sync(ds, { file });
    expect(held.result).toBe('held');
    expect(held.warnings).toEqual([expect.stringContaining(note)]);
    expect(held.message).toMatch(/empty_result: leaves no records \(the dataset has 2\): rows: Store equals "000" took 0 of 8 rows/);
  });
});
