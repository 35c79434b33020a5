import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type ConfigIssue } from '../../src/config/index.js';
import { rowsFilter } from '../../src/config/exports.js';
import { tempFiles } from './helpers.js';

/** A chain: export ho (head-office stock) taken by store-001 (its rows) and store-002 (its column); `extra` lines go under datasets. */
function chainYaml(opts: { exportLines?: string[]; store1?: string[]; extra?: string[] } = {}): string {
  return [
    'exports:',
    '  ho:',
    ...(opts.exportLines ?? ['    watch: { path: /srv/ho, include: ["stock-*.csv"] }', '    source: { type: csv }']),
    'datasets:',
    '  store-001:',
    '    api: { base_url: http://127.0.0.1:8787, key: { env: K1 } }',
    '    feeds:',
    '      stock:',
    '        role: update',
    ...(opts.store1 ?? ['        from: ho', '        rows: { column: Store, equals: "001" }', '        mapping: { fields: { record_id: SKU, attributes.stock: Qty } }']),
    '  store-002:',
    '    api: { base_url: http://127.0.0.1:8787, key: { env: K2 } }',
    '    feeds:',
    '      stock: { role: update, from: ho, mapping: { fields: { record_id: SKU, attributes.stock: Stock_002 } } }',
    ...(opts.extra ?? []),
  ].join('\n');
}

async function load(text: string) {
  const dir = await tempFiles({ 'connector.yaml': text });
  return loadConfig(join(dir, 'connector.yaml'));
}

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

describe('exports: one export fanned out to several datasets (issue 13)', () => {
  it('a feed with from reads with the export\'s source, and its rows become a row filter of its mapping', async () => {
    const c = await load(chainYaml());
    expect(Object.keys(c.exports)).toEqual(['ho']);
    const s1 = c.datasets['store-001']!;
    expect(s1.feeds.stock!.source).toEqual(c.exports.ho!.source);
    expect(s1.source).toEqual(c.exports.ho!.source);
    expect(s1.watch).toBeUndefined();
    expect(s1.mapping.filters.keep_when_match).toEqual([{ column: 'Store', pattern: '^\\s*(?:001)\\s*$' }]);
    expect(c.datasets['store-002']!.mapping.filters.keep_when_match).toEqual([]);
  });

  it('rows takes a value or any of a list, as written (regex characters are literal)', () => {
    const one = new RegExp(rowsFilter({ column: 'Store', equals: ' 001 ' }).pattern, 'u');
    expect(['001', ' 001 '].map((v) => one.test(v))).toEqual([true, true]);
    expect(['1', '0010', '0011'].some((v) => one.test(v))).toBe(false);
    const list = new RegExp(rowsFilter({ column: 'Store', equals: ['A.1', 'B|2'] }).pattern, 'u');
    expect(['A.1', 'B|2'].map((v) => list.test(v))).toEqual([true, true]);
    expect(['AX1', 'B', '2'].some((v) => list.test(v))).toBe(false);
  });

  it('validate refuses a from naming no export, with file:line', async () => {
    const text = chainYaml({ store1: ['        from: h-o', '        mapping: { fields: { record_id: SKU, attributes.stock: Qty } }'] });
    expect(await issuesOf(text)).toContainEqual({ file: 'connector.yaml', line: 11, path: 'datasets.store-001.feeds.stock.from', message: expect.stringMatching(/^no export "h-o" under exports: \(the exports are ho\)/) });
  });

  it('validate refuses a feed with from and its own source or watch', async () => {
    const text = chainYaml({
      store1: ['        from: ho', '        source: { type: csv }', '        watch: { path: /srv/s1 }', '        mapping: { fields: { record_id: SKU, attributes.stock: Qty } }'],
    });
    const issues = await issuesOf(text);
    expect(issues).toContainEqual({ file: 'connector.yaml', line: 12, path: 'datasets.store-001.feeds.stock.source', message: expect.stringMatching(/takes its file from export "ho": its source is exports\.ho\.source/) });
    expect(issues).toContainEqual({ file: 'connector.yaml', line: 13, path: 'datasets.store-001.feeds.stock.watch', message: expect.stringMatching(/its watch is exports\.ho\.watch/) });
  });

  it('validate refuses two watch blocks on one folder, an export\'s and a feed\'s, pointing at exports:', async () => {
    const own = [
      '  shop-9:',
      '    api: { base_url: http://127.0.0.1:8787, key: { env: K9 } }',
      '    source: { type: csv }',
      '    mapping: { fields: { record_id: SKU, display_name: Name, api_value: SKU } }',
      '    watch: { path: /srv/ho }',
    ];
    expect(await issuesOf(chainYaml({ extra: own }))).toContainEqual({
      file: 'connector.yaml',
      line: 22,
      path: 'datasets.shop-9.watch.path',
      message: expect.stringMatching(/^\/srv\/ho is watched by export "ho" too \(\S+:\d+ exports\.ho\.watch\.path\): .*write the folder once under exports:/),
    });
  });

  it('validate refuses a feed without source or from, an export without a trigger, a dataset schedule in an export, a number as rows value', async () => {
    expect(await issuesOf(chainYaml({ store1: ['        mapping: { fields: { record_id: SKU, attributes.stock: Qty } }'] }))).toContainEqual(
      { file: 'connector.yaml', line: 9, path: 'datasets.store-001.feeds.stock.source', message: expect.stringMatching(/^missing required option: expected source .* or from: <export>/) },
    );
    expect(await issuesOf(chainYaml({ exportLines: ['    source: { type: csv }'] }))).toContainEqual(
      { file: 'connector.yaml', line: 2, path: 'exports.ho.watch', message: expect.stringMatching(/needs a watch folder or a reread or command schedule/) },
    );
    expect(await issuesOf(chainYaml({ exportLines: ['    source: { type: csv }', '    schedules: [{ type: reconcile, cron: "0 3 * * *" }]'] }))).toContainEqual(
      { file: 'connector.yaml', line: 4, path: 'exports.ho.schedules.0.type', message: expect.stringMatching(/a reconcile schedule is a dataset's/) },
    );
    const numeric = chainYaml({ store1: ['        from: ho', '        rows: { column: Store, equals: 001 }', '        mapping: { fields: { record_id: SKU, attributes.stock: Qty } }'] });
    expect(await issuesOf(numeric)).toContainEqual({ file: 'connector.yaml', line: 12, path: 'datasets.store-001.feeds.stock.rows.equals', message: expect.stringMatching(/expected the value as text in quotes/) });
  });

  it('validate refuses an export no feed takes', async () => {
    const text = chainYaml().replace(/from: ho/g, 'from: ho2').replace('exports:\n', 'exports:\n  ho2: { source: { type: csv }, watch: { path: /srv/ho2 } }\n');
    expect(await issuesOf(text)).toContainEqual({ file: 'connector.yaml', line: 4, path: 'exports.ho', message: expect.stringMatching(/^no feed takes export "ho"/) });
  });
});

describe('exports: validate on this machine', () => {
  it('names an export folder that is not there, at the export', async () => {
    const dir = await tempFiles({ 'connector.yaml': chainYaml() });
    const err = await loadConfig(join(dir, 'connector.yaml'), { local: true }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues).toContainEqual(expect.objectContaining({ line: 3, path: 'exports.ho.watch.path', message: expect.stringMatching(/^folder \/srv\/ho does not exist/) }));
  });
});
