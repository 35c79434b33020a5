import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { configSchema, type DatasetConfig } from '../../src/config/schema.js';
import { feedView } from '../../src/feeds/view.js';
import { importableConfig } from '../../src/sync/core/importable.js';
import { CATALOGUE, withFeeds } from './helpers.js';
import { scenario, type Scenario } from '../sync/harness.js';

/**
 * Issue 13 review: a column the connector reads under an internal key (a
 * change list's command column, a shared export's rows column) that a file
 * lacks is named by the setting the user wrote, with the column, the file and
 * what to do; the internal key never reaches the message.
 */

const INTERNAL = /__dc_|keep_when_match/;

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
});

describe('messages name the user\'s setting, not an internal key', () => {
  it('a change list whose command column is missing: feeds.<feed>.commands.column, the column, the file, what to do', async () => {
    sc = await scenario({ manualClock: true });
    const ds = withFeeds(sc, {
      main: CATALOGUE,
      changes: { role: 'changes', source: { type: 'csv' }, mapping: { fields: { record_id: 'SKU', 'attributes.price': 'Price' } }, commands: { column: 'Op' } },
    });
    const file = join(sc.dir, 'changes-1.csv');
    await writeFile(file, 'SKU,Price\nA1,10\n');
    const s = await sc.engine.sync(feedView(ds, 'changes'), { file });
    expect(s.result).toBe('rejected');
    expect(s.code).toBe('COLUMN_NOT_FOUND');
    expect(s.message).toContain('feeds.changes.commands.column');
    expect(s.message).toContain('"Op"');
    expect(s.message).toContain(file);
    expect(s.message).toMatch(/name the column that holds it in feeds\.changes\.commands\.column/);
    expect(s.message).not.toMatch(INTERNAL);
    const rejected = sc.logs.filter((l) => JSON.stringify(l).match(INTERNAL));
    expect(rejected).toEqual([]);
  });

  it('a feed taking a shared export whose rows column is missing: feeds.<feed>.rows.column, the dataset, the export, the file', async () => {
    sc = await scenario({ manualClock: true });
    const parsed = configSchema.parse({
      exports: { ho: { source: { type: 'csv' }, schedules: [{ type: 'reread', path: join(sc.dir, 'ho.csv'), cron: '0 * * * *' }] } },
      datasets: {
        'store-001': {
          api: { base_url: sc.ds.api.base_url, key: { env: 'UNUSED' } },
          feeds: { stock: { role: 'full', from: 'ho', rows: { column: 'Store', equals: '001' }, mapping: CATALOGUE.mapping } },
        },
      },
    });
    const ds = { ...parsed.datasets['store-001']!, name: sc.ds.name, file: sc.ds.file, api: sc.ds.api } as DatasetConfig;
    const file = join(sc.dir, 'ho.csv');
    await writeFile(file, 'SKU,Name,Code\nA1,Apple,a1\n');
    const s = await sc.engine.sync(feedView(ds, 'stock'), { file });
    expect(s.result).toBe('rejected');
    expect(s.code).toBe('COLUMN_NOT_FOUND');
    expect(s.message).toContain('feeds.stock.rows.column');
    expect(s.message).toContain('"Store"');
    expect(s.message).toContain(file);
    expect(s.message).toContain('export ho');
    expect(s.message).toContain('dataset store-001');
    expect(s.message).not.toMatch(INTERNAL);
    expect(sc.logs.filter((l) => JSON.stringify(l).match(INTERNAL))).toEqual([]);
    // Why a good file of that feed is not uploaded (plan's path reason) names rows too, not a filter the user never wrote.
    expect(importableConfig(ds.source, ds.mapping)).toEqual({ reason: expect.stringMatching(/^feeds\.stock\.rows\.column: the feed takes only some of the export's rows/) });
  });
});
