import { mkdir, realpath, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type ConfigIssue } from '../../src/config/index.js';
import { datasetYaml, tempFiles } from './helpers.js';

/** A dataset written with feeds (indented for `datasets:`); `feeds` is the text under `feeds:` (6 spaces). */
function feedsYaml(feeds: string, extra = ''): string {
  return [
    'datasets:',
    '  shop-1:',
    '    api:',
    '      base_url: http://127.0.0.1:8787',
    '      key: { env: SHOP_1_KEY }',
    '    feeds:',
    feeds,
    extra,
  ]
    .filter((l) => l !== '')
    .join('\n');
}

const CATALOGUE = ['      main:', '        source: { type: csv }', '        mapping:', '          fields: { record_id: SKU, display_name: Name, api_value: SKU }'].join('\n');
const STOCK = ['      stock:', '        role: update', '        source: { type: csv }', '        mapping:', '          fields: { record_id: SKU, attributes.stock: Qty }'].join('\n');

async function issuesOf(text: string): Promise<ConfigIssue[]> {
  const dir = await tempFiles({ 'connector.yaml': text });
  try {
    await loadConfig(join(dir, 'connector.yaml'));
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.issues.map((i) => ({ ...i, file: i.file.slice(dir.length + 1) }));
  }
  throw new Error('expected a ConfigError');
}

/** The config loads: no issues. */
async function loads(text: string): Promise<void> {
  const dir = await tempFiles({ 'connector.yaml': text });
  await loadConfig(join(dir, 'connector.yaml'));
}

describe('feeds (issue 13): the config', () => {
  it('the single-source form is one full feed named main, also seen as the dataset\'s own source and mapping', async () => {
    const dir = await tempFiles({ 'connector.yaml': `datasets:\n${datasetYaml('shop-1')}\n` });
    const ds = (await loadConfig(join(dir, 'connector.yaml'))).datasets['shop-1']!;
    expect(Object.keys(ds.feeds)).toEqual(['main']);
    expect(ds.feeds.main).toMatchObject({ role: 'full', source: ds.source, mapping: ds.mapping, schedules: [] });
    expect(ds.feed).toBe('main');
    expect(ds.precedence).toEqual({});
  });

  it('a catalogue and a stock feed: the full feed is the primary one; the update feed maps record_id and its fields only', async () => {
    const dir = await tempFiles({ 'connector.yaml': feedsYaml(`${STOCK}\n${CATALOGUE}`) });
    const ds = (await loadConfig(join(dir, 'connector.yaml'))).datasets['shop-1']!;
    expect(Object.keys(ds.feeds)).toEqual(['stock', 'main']);
    expect(ds.feed).toBe('main');
    expect(ds.feeds.stock).toMatchObject({ role: 'update', mapping: { fields: { record_id: 'SKU', 'attributes.stock': 'Qty' } } });
    expect(ds.mapping.fields).toEqual({ record_id: 'SKU', display_name: 'Name', api_value: 'SKU' });
  });

  it('validate refuses two full feeds, with file:line', async () => {
    const second = CATALOGUE.replace('      main:', '      other:');
    expect(await issuesOf(feedsYaml(`${CATALOGUE}\n${second}`))).toContainEqual(
      { file: 'connector.yaml', line: 11, path: 'datasets.shop-1.feeds.other.role', message: expect.stringMatching(/^feed "other" is a second full feed \(feed "main" is one\): expected at most one full feed/) },
    );
  });

  it('validate refuses a field mapped by two feeds without precedence, and accepts it with one', async () => {
    const both = CATALOGUE.replace('api_value: SKU }', 'api_value: SKU, attributes.stock: Stock }');
    expect(await issuesOf(feedsYaml(`${both}\n${STOCK}`))).toEqual([
      {
        file: 'connector.yaml',
        line: 15,
        path: 'datasets.shop-1.feeds.stock.mapping.fields.attributes.stock',
        message: 'attributes.stock is mapped by feeds "main" and "stock": say which wins with precedence: { attributes.stock: main | stock | newest } beside feeds, or map it in one feed only',
      },
    ]);
    const dir = await tempFiles({ 'connector.yaml': feedsYaml(`${both}\n${STOCK}`, '    precedence: { attributes.stock: stock }') });
    expect((await loadConfig(join(dir, 'connector.yaml'))).datasets['shop-1']!.precedence).toEqual({ 'attributes.stock': 'stock' });
    // Precedence holds whichever feed syncs (resolve.ts): any feed mapping the field, or newest, is accepted.
    for (const winner of ['newest', 'main']) await loads(feedsYaml(`${both}\n${STOCK}`, `    precedence: { attributes.stock: ${winner} }`));
    expect(await issuesOf(feedsYaml(`${both}\n${STOCK}`, '    precedence: { attributes.stock: web }'))).toEqual([
      { file: 'connector.yaml', line: 16, path: 'datasets.shop-1.precedence.attributes.stock', message: '"web" does not map attributes.stock (expected newest or one of the feeds mapping it: main, stock)' },
    ]);
  });

  it('validate refuses an update mapping without record_id, and a full one without display_name', async () => {
    const noId = STOCK.replace('record_id: SKU, ', '');
    const noName = CATALOGUE.replace('display_name: Name, ', '');
    expect(await issuesOf(feedsYaml(`${noName}\n${noId}`))).toEqual([
      { file: 'connector.yaml', line: 10, path: 'datasets.shop-1.feeds.main.mapping.fields', message: 'record_id, display_name and api_value must be mapped' },
      { file: 'connector.yaml', line: 15, path: 'datasets.shop-1.feeds.stock.mapping.fields', message: 'record_id must be mapped: a feed finds its records by it' },
    ]);
  });

  it('validate refuses two watchers on one folder, across feeds and datasets', async () => {
    const watched = (text: string) => `${text}\n        watch: { path: /srv/exports }`;
    expect(await issuesOf(feedsYaml(`${watched(CATALOGUE)}\n${watched(STOCK)}`))).toEqual([
      { file: 'connector.yaml', line: 17, path: 'datasets.shop-1.feeds.stock.watch.path', message: expect.stringMatching(/^\/srv\/exports is watched by dataset "shop-1" feed "main" too \(\S+connector\.yaml:11 datasets\.shop-1\.feeds\.main\.watch\.path\): expected one watcher per folder/) },
    ]);
  });

  // Review of #13 (rv13): the check compares the path text, so one folder written as /srv/exports and
  // /srv/exports/ (or /srv/./exports) gets two watchers that race for each file. Fails until paths are normalised.
  it('validate refuses two watchers on one folder written differently (trailing slash, ./)', async () => {
    const watched = (text: string, path: string) => `${text}\n        watch: { path: ${path} }`;
    expect(await issuesOf(feedsYaml(`${watched(CATALOGUE, '/srv/exports')}\n${watched(STOCK, '/srv/exports/')}`))).toEqual([
      { file: 'connector.yaml', line: 17, path: 'datasets.shop-1.feeds.stock.watch.path', message: expect.stringMatching(/is watched by dataset "shop-1" feed "main" too/) },
    ]);
    const [issue] = await issuesOf(feedsYaml(`${watched(CATALOGUE, '/srv/x/ho')}\n${watched(STOCK, '/srv/x/./ho')}`));
    // Both settings are named with file:line, so a person finds the other one.
    expect(issue!.message).toMatch(/^\/srv\/x\/\.\/ho is watched by dataset "shop-1" feed "main" too \(\S+connector\.yaml:11 datasets\.shop-1\.feeds\.main\.watch\.path, written \/srv\/x\/ho; both are \/srv\/x\/ho\)/);
    expect(issue!.message).toContain('exports:');
  });

  it('validate refuses a watch folder reached through a symlink to another watched folder', async () => {
    const dir = await tempFiles({});
    await mkdir(join(dir, 'real'));
    await symlink(join(dir, 'real'), join(dir, 'link'));
    const text = feedsYaml(`${CATALOGUE}\n        watch: { path: real }\n${STOCK}\n        watch: { path: link }`);
    await writeFile(join(dir, 'connector.yaml'), text);
    await loadConfig(join(dir, 'connector.yaml')); // the written paths differ: only validate (local) looks at the disk
    const err = await loadConfig(join(dir, 'connector.yaml'), { local: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues).toEqual([
      {
        file: join(dir, 'connector.yaml'),
        line: 17,
        path: 'datasets.shop-1.feeds.stock.watch.path',
        message: expect.stringContaining(`${join(dir, 'link')} is watched by dataset "shop-1" feed "main" too (${join(dir, 'connector.yaml')}:11 datasets.shop-1.feeds.main.watch.path, written ${join(dir, 'real')}; both are ${await realpath(join(dir, 'real'))})`),
      },
    ]);
  });

  it('validate accepts every missing strategy beside a full feed (the feed state keeps what set and deactivate did)', async () => {
    for (const strategy of ['set, values: { attributes.stock: 0 }', 'deactivate', 'leave']) {
      await loads(feedsYaml(`${CATALOGUE}\n${STOCK}\n        missing: { strategy: ${strategy} }`));
    }
  });

  it('empty_clears names fields the update feed maps; a full feed has none', async () => {
    await loads(feedsYaml(`${CATALOGUE}\n${STOCK}\n        empty_clears: [attributes.stock]`));
    expect(await issuesOf(feedsYaml(`${CATALOGUE}\n${STOCK}\n        empty_clears: [attributes.price]`))).toEqual([
      { file: 'connector.yaml', line: 16, path: 'datasets.shop-1.feeds.stock.empty_clears.0', message: 'attributes.price is not mapped by this feed: empty_clears names fields it maps' },
    ]);
  });

  it('a watch and schedules on an update feed are accepted: the daemon runs each feed by its own triggers', async () => {
    const text = feedsYaml(`${CATALOGUE}\n${STOCK}\n        watch: { path: /srv/stock }\n        schedules: [{ type: reconcile, cron: "0 * * * *" }]`);
    const dir = await tempFiles({ 'connector.yaml': text });
    expect((await loadConfig(join(dir, 'connector.yaml'))).datasets['shop-1']!.feeds.stock!.watch?.path).toBe('/srv/stock');
  });

  it('the single-source options beside feeds are refused where they are written', async () => {
    expect(await issuesOf(feedsYaml(CATALOGUE, '    source: { type: csv }'))).toEqual([
      { file: 'connector.yaml', line: 11, path: 'datasets.shop-1.source', message: 'source is written beside feeds: expected it inside the feed it belongs to (feeds: { <name>: { source: … } })' },
    ]);
  });

  it('errors of the single-source form keep their paths (no feeds.main in them)', async () => {
    const text = `datasets:\n${datasetYaml('shop-1')}\n`.replace('        display_name: Name\n', '');
    expect(await issuesOf(text)).toEqual([{ file: 'connector.yaml', line: 10, path: 'datasets.shop-1.mapping.fields', message: 'record_id, display_name and api_value must be mapped' }]);
  });

  it('missing: set needs values of fields the feed maps; a full feed has no missing strategy', async () => {
    const stock = `${STOCK}\n        missing: { strategy: set, values: { attributes.price: 0 } }`;
    const full = `${CATALOGUE}\n        missing: { strategy: deactivate }`;
    expect(await issuesOf(feedsYaml(`${full}\n${stock}`))).toEqual([
      { file: 'connector.yaml', line: 11, path: 'datasets.shop-1.feeds.main.missing.strategy', message: 'a full feed deletes the records it does not list (within the guards): missing is for update feeds' },
      { file: 'connector.yaml', line: 17, path: 'datasets.shop-1.feeds.stock.missing.values.attributes.price', message: 'attributes.price is not mapped by this feed: it may set only the fields it owns' },
    ]);
  });

  it('a change list needs its command column; commands belong to role changes only; a word of two commands is refused', async () => {
    const changes = STOCK.replace('      stock:', '      changes:').replace('role: update', 'role: changes');
    expect(await issuesOf(feedsYaml(`${CATALOGUE}\n${changes}`))).toEqual([
      { file: 'connector.yaml', line: 11, path: 'datasets.shop-1.feeds.changes.commands', message: 'role changes needs commands: { column: <the command column> }' },
    ]);
    const twice = `${changes}\n        commands: { column: Op, words: { delete: [delete, drop], ignore: [DROP] } }`;
    expect(await issuesOf(feedsYaml(`${CATALOGUE}\n${twice}`))).toEqual([
      { file: 'connector.yaml', line: 16, path: 'datasets.shop-1.feeds.changes.commands.words.ignore', message: '"DROP" is a word of delete too' },
    ]);
    const onUpdate = `${STOCK}\n        commands: { column: Op }`;
    expect(await issuesOf(feedsYaml(`${CATALOGUE}\n${onUpdate}`))).toEqual([
      { file: 'connector.yaml', line: 16, path: 'datasets.shop-1.feeds.stock.commands', message: 'commands go with role: changes' },
    ]);
  });
});
