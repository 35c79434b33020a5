import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/index.js';
import { tempFiles } from './helpers.js';

const ROOT = join(import.meta.dirname, '../..');
const BEGIN = '# --- feeds form: begin ---';
const END = '# --- feeds form: end ---';

/** The shipped example with its commented feeds form taken in (the leading "# " of each line between the markers removed). */
async function exampleWithFeeds(): Promise<string> {
  const text = await readFile(join(ROOT, 'config/connector.example.yaml'), 'utf8');
  const lines = text.split('\n');
  const from = lines.findIndex((l) => l.trim() === BEGIN);
  const to = lines.findIndex((l) => l.trim() === END);
  expect(from, `config/connector.example.yaml has no "${BEGIN}" line`).toBeGreaterThan(0);
  expect(to).toBeGreaterThan(from);
  const body = lines.slice(from + 1, to).map((l) => {
    const m = /^(\s*)# ?(.*)$/.exec(l);
    expect(m, `a line of the feeds form is not commented: ${l}`).not.toBeNull();
    return `${m![1]}${m![2]}`;
  });
  return [...lines.slice(0, from), ...body, ...lines.slice(to + 1)].join('\n');
}

describe('config/connector.example.yaml: the feeds form', () => {
  it('validates once uncommented, as validate checks it on this machine (key files, watch folders)', async () => {
    const dir = await tempFiles({ 'keys/shop-1': 'tbd_live_example_key_000000000000\n', 'keys/shop-2': 'tbd_live_example_key_000000000000\n' });
    await mkdir(join(dir, 'pos/shop-1'), { recursive: true });
    await mkdir(join(dir, 'pos/shop-2/catalogue'), { recursive: true });
    await mkdir(join(dir, 'pos/shop-2/stock'), { recursive: true });
    const yaml = (await exampleWithFeeds())
      .replaceAll('/etc/dataset-connector/keys/', `${join(dir, 'keys')}/`)
      .replaceAll('/srv/pos-export/', `${join(dir, 'pos')}/`)
      .replace('state_dir: /var/lib/dataset-connector', `state_dir: ${join(dir, 'state')}`);
    await writeFile(join(dir, 'connector.yaml'), yaml);
    const config = await loadConfig(join(dir, 'connector.yaml'), { local: true });
    expect(Object.keys(config.datasets)).toEqual(['shop-1', 'shop-2']);
    const one = config.datasets['shop-1']!;
    expect(Object.entries(one.feeds).map(([n, f]) => [n, f.role])).toEqual([['main', 'full']]);
    const two = config.datasets['shop-2']!;
    expect(Object.fromEntries(Object.entries(two.feeds).map(([n, f]) => [n, f.role]))).toEqual({ main: 'full', stock: 'update', changes: 'changes' });
    expect(two.feed).toBe('main');
    expect(two.feeds.stock!.watch?.path).toBe(join(dir, 'pos/shop-2/stock'));
    expect(two.feeds.changes!.commands!.words.update).toEqual(['変更']);
    expect(two.feeds.changes!.commands!.words.create).toEqual(['create', 'add', 'new']);
    expect(config.warnings).toEqual([]);
  });
});
