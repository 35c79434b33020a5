import { mkdir, mkdtemp, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { RunningEmulator } from '../../src/emulator/server.js';

// Issue 13's fan-out scenario: export ho (a head office's stock file) taken by three store datasets.

/** The head office's file: a Store column (stores 001 and 002 take their rows), and a stock column of store 003. */
export function headOffice(qty: (sku: string) => number, opts: { badStore002?: boolean } = {}): string {
  const rows = [
    ['A1', 'Apple', '001'],
    ['A2', 'Pear', '001'],
    ['B1', 'Bean', '002'],
    ['B2', 'Kale', '002'],
  ].map(([sku, name, store]) => `${sku},${name},${store},${opts.badStore002 && store === '002' ? 'many' : qty(sku!)},${qty(sku!) + 100}`);
  return ['SKU,Name,Store,Qty,Stock_003', ...rows].join('\n') + '\n';
}

/** Three store datasets on the emulator taking export ho from one folder (full feeds, or stock updates with role update). */
export async function chain(emu: RunningEmulator, prefix: string, timing: { settleMs: number; pollMs: number; log?: string } = { settleMs: 100, pollMs: 30 }, role: 'full' | 'update' = 'full') {
  const dir = await mkdtemp(join(tmpdir(), 'dc-fanout-'));
  const inbox = join(dir, 'ho');
  await mkdir(inbox);
  const env: NodeJS.ProcessEnv = {};
  const datasets: Record<string, unknown> = {};
  const ids: string[] = [];
  const store = (rows: string | null, stock: string) => ({
    role,
    from: 'ho',
    ...(rows ? { rows: { column: 'Store', equals: rows } } : {}),
    mapping: { fields: { record_id: 'SKU', ...(role === 'full' ? { display_name: 'Name', api_value: 'SKU' } : {}), 'attributes.stock': { column: stock, transforms: [{ integer: {} }] } } },
  });
  for (const [n, feed] of [
    ['1', store('001', 'Qty')],
    ['2', store('002', 'Qty')],
    ['3', store(null, 'Stock_003')],
  ] as const) {
    const id = `${prefix}-store-${n}`;
    ids.push(id);
    emu.emulator.addDataset({ id });
    env[`KEY_${n}`] = emu.emulator.addKey({ dataset: id });
    datasets[`store-00${n}`] = {
      api: { base_url: emu.url, dataset_id: id, key: { env: `KEY_${n}` }, retry: { max_attempts: 2, base_delay_ms: 10, max_delay_ms: 20 } },
      policy: { staging: false },
      // An update feed changes records the dataset has: each store's catalogue comes from the head office's catalogue export.
      feeds: role === 'full' ? { stock: feed } : { main: { role: 'full', from: 'cat', ...(n === '3' ? {} : { rows: { column: 'Store', equals: `00${n}` } }), mapping: { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'SKU' } } }, stock: feed },
    };
  }
  if (role === 'update') {
    await mkdir(join(dir, 'cat'));
    await writeFile(join(dir, 'cat', 'cat.csv'), 'SKU,Name,Store\nA1,Apple,001\nA2,Pear,001\nB1,Bean,002\nB2,Kale,002\n');
    await utimes(join(dir, 'cat', 'cat.csv'), new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
  }
  const configPath = join(dir, 'connector.yaml');
  const config = {
    state_dir: join(dir, 'state'),
    timezone: 'UTC',
    ...(timing.log ? { log: { level: timing.log } } : {}),
    exports: {
      ho: { watch: { path: inbox, include: ['stock-*.csv'], settle_ms: timing.settleMs, poll_interval_ms: timing.pollMs, after: 'move' }, source: { type: 'csv' } },
      ...(role === 'full' ? {} : { cat: { watch: { path: join(dir, 'cat'), include: ['*.csv'], settle_ms: timing.settleMs, poll_interval_ms: timing.pollMs, after: 'move' }, source: { type: 'csv' } } }),
    },
    datasets,
  };
  await writeFile(configPath, stringify(config));
  const stocks = (i: number) => Object.fromEntries(emu.emulator.records(ids[i]!).map((r) => [r.record_id, (r.attributes as { stock?: number }).stock]));
  return { dir, inbox, configPath, env, ids, stocks };
}
