import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEngine } from '../../src/cli/engine.js';
import { loadConfig } from '../../src/config/index.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { feedView } from '../../src/feeds/view.js';
import { silentLogger } from '../../src/log/logger.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { tempFiles } from '../config/helpers.js';

const ROOT = join(import.meta.dirname, '../..');
const MARKER = '<!-- feeds-example:';
const BASE_URL = 'https://api.example.com';
const KEY_FILE = '/etc/dataset-connector/keys/shop-1.key';

/** The YAML block of README's feeds section, found by its marker comment (the test breaks when the README drifts). */
function readmeExample(): string {
  const text = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const at = text.indexOf(MARKER);
  expect(at, `README.md has no "${MARKER}" comment before the feeds example`).toBeGreaterThan(0);
  const block = /^[^\n]*\n```yaml\n([\s\S]*?)```/.exec(text.slice(at));
  expect(block, 'the feeds-example marker is not followed by a ```yaml block').not.toBeNull();
  return block![1]!;
}

let em: RunningEmulator | undefined;
afterEach(async () => {
  await em?.close();
  em = undefined;
});

describe("README's feeds example", () => {
  it('is a valid configuration with the roles it describes', async () => {
    const dir = await tempFiles({ 'connector.yaml': readmeExample() });
    const ds = (await loadConfig(join(dir, 'connector.yaml'))).datasets['shop-1']!;
    expect(Object.fromEntries(Object.entries(ds.feeds).map(([n, f]) => [n, f.role]))).toEqual({ main: 'full', stock: 'update', changes: 'changes' });
    expect(ds.feeds.stock!.missing).toEqual({ strategy: 'leave' });
    expect(ds.feed).toBe('main');
  });

  it('runs as written against the emulator: the catalogue, then a stock file, then a change list', async () => {
    em = await startEmulator();
    em.emulator.addDataset({ id: 'shop-1' });
    const key = em.emulator.addKey({ dataset: 'shop-1', roles: ['read', 'write', 'replace', 'publish'] });
    // Only the address, the key's file and the state folder are filled in; everything else is the README's.
    const example = readmeExample();
    expect(example).toContain(BASE_URL);
    expect(example).toContain(KEY_FILE);
    const dir = await tempFiles({ 'shop-1.key': `${key}\n` });
    const yaml = `state_dir: ${join(dir, 'state')}\n${example.replace(BASE_URL, em.url).replace(KEY_FILE, join(dir, 'shop-1.key'))}`;
    await writeFile(join(dir, 'connector.yaml'), yaml);
    const cli = await cliEngine(await loadConfig(join(dir, 'connector.yaml')), silentLogger(), ['shop-1']);
    try {
      const sync = async (feed: string | undefined, name: string, lines: string[]) => {
        const file = join(dir, name);
        await writeFile(file, lines.join('\n') + '\n');
        return cli.engine.sync(feedView(cli.dataset('shop-1'), feed), { file });
      };
      const ids = Array.from({ length: 10 }, (_, i) => `SKU-${i + 1}`);
      const cat = await sync(undefined, 'catalogue.csv', ['SKU,Name', ...ids.map((id) => `${id},Item ${id}`)]);
      expect(cat).toMatchObject({ result: 'published', adds: 10 });
      const stock = await sync('stock', 'stock.csv', ['SKU,Qty', ...ids.map((id, i) => `${id},${i + 1}`), 'SKU-404,5']);
      expect(stock).toMatchObject({ result: 'published', changes: 10, feed: { name: 'stock', matched: 10, unmatched: 1, firstUnmatched: ['SKU-404'] } });
      const changes = await sync('changes', 'changes.csv', ['SKU,Price,Op', 'SKU-1,100,update', 'SKU-2,250.5,Change', 'SKU-3,,delete', 'SKU-4,9,ignore']);
      expect(changes).toMatchObject({ result: 'published', changes: 2, deletes: 1, adds: 0, rowErrors: 0 });

      const expected: DatasetRecord[] = ids
        .map((id, i): DatasetRecord => ({
          record_id: id,
          display_name: `Item ${id}`,
          api_value: id,
          aliases: [],
          attributes: { stock: i + 1, ...(id === 'SKU-1' ? { price: 100 } : id === 'SKU-2' ? { price: 250.5 } : {}) },
          active: true,
        }))
        .filter((r) => r.record_id !== 'SKU-3')
        .sort((a, b) => (a.record_id < b.record_id ? -1 : 1));
      expect(em.emulator.records('shop-1')).toEqual(expected);
      // The catalogue again keeps what the other feeds set.
      expect((await sync(undefined, 'catalogue-2.csv', ['SKU,Name', ...ids.filter((id) => id !== 'SKU-3').map((id) => `${id},Item ${id}`)])).result).toBe('unchanged');
    } finally {
      await cli.close();
    }
  });
});
