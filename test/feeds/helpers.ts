import { utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { datasetConfigSchema, type DatasetConfig } from '../../src/config/schema.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { scenario, type Scenario } from '../sync/harness.js';

/** The catalogue feed of these tests: SKU, Name, Code (the scenario's export layout). */
export const CATALOGUE = { source: { type: 'csv' }, mapping: { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'Code' } } };

/** A stock-only update feed: SKU and Qty (an integer) into attributes.stock. */
export const STOCK = { role: 'update', source: { type: 'csv' }, mapping: { fields: { record_id: 'SKU', 'attributes.stock': { column: 'Qty', transforms: ['integer'] } } } };

/** The scenario's dataset with these feeds (and dataset options such as precedence or policy), as loadConfig gives it. */
export function withFeeds(sc: Scenario, feeds: Record<string, unknown>, extra: Record<string, unknown> = {}): DatasetConfig {
  const parsed = datasetConfigSchema.parse({ api: { base_url: sc.ds.api.base_url, key: { env: 'UNUSED' } }, feeds, policy: sc.ds.policy, ...extra });
  return { ...parsed, name: sc.ds.name, file: sc.ds.file, api: sc.ds.api } as DatasetConfig;
}

/** Write a stock file (SKU,Qty) into the scenario's folder; returns its path. */
export async function writeStockFile(sc: Scenario, stock: Record<string, number>, name: string): Promise<string> {
  const file = join(sc.dir, name);
  await writeFile(file, ['SKU,Qty', ...Object.entries(stock).map(([id, q]) => `${id},${q}`)].join('\n') + '\n');
  return file;
}

/** The published stock by record_id (undefined: no stock attribute). */
export function stockOf(sc: Scenario): Record<string, unknown> {
  return Object.fromEntries(sc.published().map((r) => [r.record_id, r.attributes.stock]));
}

/** A scenario with a catalogue of `records` published by its main feed; `ds` has feeds main (full) and stock (update). */
export async function feedScenario(records: DatasetRecord[], extra: Record<string, unknown> = {}, seed?: DatasetRecord[]): Promise<{ sc: Scenario; ds: DatasetConfig }> {
  const sc = await scenario({ manualClock: true, ...(seed ? { records: seed } : {}) });
  const ds = withFeeds(sc, { main: CATALOGUE, stock: STOCK }, extra);
  const first = await sc.engine.sync(ds, { file: await sc.writeExport(records, 'catalogue-0.csv') });
  if (first.result !== 'published') throw new Error(`first sync: ${first.result} ${first.message}`);
  return { sc, ds };
}

const T0 = Date.UTC(2026, 0, 5, 9, 0, 0);

/** Write `lines` as `name` in the scenario's folder, modified `at` seconds after a fixed time (a batch orders its files by it). */
export async function writeFileAt(s: Scenario, name: string, lines: string[], at: number): Promise<string> {
  const file = join(s.dir, name);
  await writeFile(file, lines.join('\n') + '\n');
  await utimes(file, new Date(T0 + at * 1000), new Date(T0 + at * 1000));
  return file;
}
