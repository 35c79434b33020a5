import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DatasetRecord } from '../../src/model/record.js';
import { scenario, type Scenario } from './harness.js';

/** A shop item of the stock/price tests (issue 14): stock and price are attributes. */
export interface Item {
  id: string;
  name: string;
  stock: number;
  price: number;
}

/** The mapping of a stock export: SKU, Name, Code, Stock (integer), Price (number). */
export const STOCK_MAPPING = {
  fields: {
    record_id: 'SKU',
    display_name: 'Name',
    api_value: 'Code',
    'attributes.stock': { column: 'Stock', transforms: ['integer'] },
    'attributes.price': { column: 'Price', transforms: ['number'] },
  },
};

/** Items i-001 … i-n with varied stock (1…40) and prices (100…1090). */
export function items(n: number): Item[] {
  return Array.from({ length: n }, (_, i) => ({ id: `i-${String(i + 1).padStart(3, '0')}`, name: `Item ${i + 1}`, stock: (i % 40) + 1, price: 100 + (i % 10) * 110 }));
}

/** The record an item becomes once published. */
export function itemRecord(it: Item): DatasetRecord {
  return { record_id: it.id, display_name: it.name, api_value: `code-${it.id}`, aliases: [], attributes: { stock: it.stock, price: it.price }, active: true };
}

/** Write a stock export into the scenario's folder; returns its path. */
export async function writeStock(s: Scenario, list: Item[], name: string): Promise<string> {
  const file = join(s.dir, name);
  await writeFile(file, ['SKU,Name,Code,Stock,Price', ...list.map((x) => `${x.id},${x.name},code-${x.id},${x.stock},${x.price}`)].join('\n') + '\n');
  return file;
}

/** A scenario whose exports carry stock and price, with `list` published by a first sync. */
export async function stockScenario(list: Item[], policy: Record<string, unknown> = {}, seed?: DatasetRecord[]): Promise<Scenario> {
  const s = await scenario({ mapping: STOCK_MAPPING, policy, ...(seed ? { records: seed } : {}) });
  const first = await s.engine.sync(s.ds, { file: await writeStock(s, list, 'day-0.csv') });
  if (first.result !== 'published') throw new Error(`first sync: ${first.result} ${first.message}`);
  return s;
}

/** The published records' attributes by record_id. */
export function publishedAttrs(s: Scenario): Map<string, DatasetRecord['attributes']> {
  return new Map(s.published().map((r) => [r.record_id, r.attributes]));
}
