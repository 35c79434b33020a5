import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type ConfigIssue } from '../../src/config/index.js';
import { datasetYaml, tempFiles } from './helpers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** Load from a temp folder and return the issues, with file names relative to it. */
async function issuesOf(files: Record<string, string>): Promise<ConfigIssue[]> {
  const dir = await tempFiles(files);
  try {
    await loadConfig(join(dir, 'connector.yaml'));
  } catch (err) {
    if (err instanceof ConfigError) {
      expect(err.code).toBe('CONFIG_INVALID');
      expect(err.action).toBe('stop');
      return err.issues.map((i) => ({ ...i, file: i.file.startsWith(dir) ? i.file.slice(dir.length + 1) : i.file }));
    }
    throw err;
  }
  throw new Error('expected a ConfigError');
}

const one = (name = 'shop-1', extra = '') => `datasets:\n${datasetYaml(name, extra)}\n`;

describe('loadConfig: a good configuration', () => {
  it('applies defaults and takes the dataset name as dataset_id', async () => {
    const dir = await tempFiles({ 'connector.yaml': one() });
    const config = await loadConfig(join(dir, 'connector.yaml'));
    expect(config.state_dir).toBe('/var/lib/dataset-connector');
    expect(config.timezone).toBe('UTC');
    expect(config.log).toEqual({ level: 'info', format: 'json' });
    expect(config.health).toBeUndefined();
    const ds = config.datasets['shop-1']!;
    expect(ds).toMatchObject({ name: 'shop-1', file: join(dir, 'connector.yaml') });
    expect(ds.api).toMatchObject({ dataset_id: 'shop-1', rate_per_minute: 100, connect_timeout_ms: 10_000, key: { env: 'SHOP_1_KEY' } });
    expect(ds.api.retry).toEqual({ max_attempts: 5, base_delay_ms: 1_000, max_delay_ms: 60_000 });
    expect(ds.schedules).toEqual([]);
    expect(ds.policy.staging).toBe(true);
    expect(config.files).toEqual([join(dir, 'connector.yaml')]);
  });

  it('expands shorthands: log level, health, key source', async () => {
    const text = `log: debug\nhealth: true\n${one('shop-1').replace('key: { env: SHOP_1_KEY }', 'key: "file:/etc/dc/key"')}`;
    const dir = await tempFiles({ 'connector.yaml': text });
    const config = await loadConfig(join(dir, 'connector.yaml'));
    expect(config.log).toEqual({ level: 'debug', format: 'json' });
    expect(config.health).toEqual({ listen: '127.0.0.1:9464' });
    expect(config.datasets['shop-1']!.api.key).toEqual({ file: '/etc/dc/key' });
  });

  it('merges conf.d/*.yaml in name order, ignoring other names', async () => {
    const dir = await tempFiles({
      'connector.yaml': `timezone: Asia/Tokyo\n${one('shop-1')}`,
      'conf.d/20-b.yaml': one('shop-3'),
      'conf.d/10-a.yaml': one('shop-2'),
      'conf.d/notes.txt': 'not yaml: [',
      'conf.d/.hidden.yaml': 'broken: [',
    });
    const config = await loadConfig(join(dir, 'connector.yaml'));
    expect(Object.keys(config.datasets)).toEqual(['shop-1', 'shop-2', 'shop-3']);
    expect(config.datasets['shop-2']!.file).toBe(join(dir, 'conf.d/10-a.yaml'));
    expect(config.files).toEqual([join(dir, 'connector.yaml'), join(dir, 'conf.d/10-a.yaml'), join(dir, 'conf.d/20-b.yaml')]);
  });

  it('accepts the shipped example configuration', async () => {
    const config = await loadConfig(join(root, 'config/connector.example.yaml'));
    expect(Object.keys(config.datasets)).toEqual(['shop-1']);
    expect(config.datasets['shop-1']!.api.key).toEqual({ credential: 'shop-1-key', file: '/etc/dataset-connector/keys/shop-1' });
  });
});

describe('loadConfig: every error names file, line, option path and what is expected', () => {
  it('unknown key at the top, with the allowed options', async () => {
    expect(await issuesOf({ 'connector.yaml': `timezone: UTC\nstate_dirr: /x\n${one()}` })).toEqual([
      { file: 'connector.yaml', line: 2, path: 'state_dirr', message: expect.stringMatching(/^unknown option "state_dirr" \(expected one of: state_dir, timezone, log/) },
    ]);
  });

  it('unknown key deep inside a dataset points at the key', async () => {
    const issues = await issuesOf({ 'connector.yaml': one('shop-1', '    policy:\n      stagin: false') });
    expect(issues).toEqual([
      { file: 'connector.yaml', line: 14, path: 'datasets.shop-1.policy.stagin', message: expect.stringMatching(/^unknown option "stagin" \(expected one of: staging,/) },
    ]);
  });

  it('wrong type: says what was expected and what was found', async () => {
    const text = one().replace('      base_url: http://127.0.0.1:8787', '      base_url: http://127.0.0.1:8787\n      rate_per_minute: fast');
    expect(await issuesOf({ 'connector.yaml': text })).toEqual([
      { file: 'connector.yaml', line: 5, path: 'datasets.shop-1.api.rate_per_minute', message: 'expected number, got the text "fast"' },
    ]);
  });

  it('out of range value', async () => {
    const text = one().replace('      base_url: http://127.0.0.1:8787', '      base_url: http://127.0.0.1:8787\n      rate_per_minute: 500');
    const [issue] = await issuesOf({ 'connector.yaml': text });
    expect(issue).toMatchObject({ line: 5, path: 'datasets.shop-1.api.rate_per_minute' });
    expect(issue!.message).toMatch(/120/);
  });

  it('missing required option is reported at the object that lacks it', async () => {
    const text = one().replace('      base_url: http://127.0.0.1:8787\n', '');
    expect(await issuesOf({ 'connector.yaml': text })).toEqual([
      { file: 'connector.yaml', line: 3, path: 'datasets.shop-1.api.base_url', message: 'missing required option: expected string' },
    ]);
  });

  it('a bad dataset name', async () => {
    const [issue] = await issuesOf({ 'connector.yaml': one('Shop 1') });
    expect(issue).toMatchObject({ path: 'datasets.Shop 1' });
    expect(issue!.message).toMatch(/lowercase letters/);
  });

  it('YAML syntax error with its line', async () => {
    const issues = await issuesOf({ 'connector.yaml': 'timezone: UTC\ndatasets:\n  shop-1: [unclosed\n' });
    expect(issues[0]).toMatchObject({ file: 'connector.yaml', path: '' });
    expect(issues[0]!.line).toBeGreaterThanOrEqual(3);
    expect(issues[0]!.message).toMatch(/^not valid YAML/);
  });

  it('duplicate key in one file', async () => {
    const issues = await issuesOf({ 'connector.yaml': `timezone: UTC\ntimezone: UTC\n${one()}` });
    expect(issues[0]).toMatchObject({ file: 'connector.yaml', line: 2, path: 'timezone' });
    expect(issues[0]!.message).toMatch(/^option "timezone" is written twice/);
  });

  it('a top level that is not a mapping', async () => {
    expect(await issuesOf({ 'connector.yaml': '- a\n- b\n' })).toEqual([
      { file: 'connector.yaml', line: 1, path: '', message: 'expected a mapping of options (key: value) at the top of the file' },
    ]);
  });

  it('a missing main file', async () => {
    const issues = await issuesOf({ 'other.yaml': '' });
    expect(issues).toEqual([{ file: 'connector.yaml', line: null, path: '', message: 'cannot read the configuration: file not found' }]);
  });

  it('no dataset anywhere', async () => {
    expect(await issuesOf({ 'connector.yaml': 'timezone: UTC\n' })).toEqual([
      { file: 'connector.yaml', line: 1, path: 'datasets', message: expect.stringMatching(/no dataset is defined/) },
    ]);
  });

  it('errors in a conf.d file name that file and its lines', async () => {
    const issues = await issuesOf({
      'connector.yaml': one('shop-1'),
      'conf.d/shop-2.yaml': one('shop-2').replace('      base_url: http://127.0.0.1:8787', '      base_url: http://127.0.0.1:8787\n      colour: red'),
    });
    expect(issues).toEqual([
      { file: 'conf.d/shop-2.yaml', line: 5, path: 'datasets.shop-2.api.colour', message: expect.stringMatching(/^unknown option "colour"/) },
    ]);
  });

  it('a dataset defined twice names both files and lines', async () => {
    const dir = await tempFiles({ 'connector.yaml': one('shop-1'), 'conf.d/a.yaml': `# extra\n${one('shop-1')}` });
    const err = await loadConfig(join(dir, 'connector.yaml')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    const [issue] = (err as ConfigError).issues;
    expect(issue).toMatchObject({ file: join(dir, 'conf.d/a.yaml'), line: 3, path: 'datasets.shop-1' });
    expect(issue!.message).toBe(`dataset "shop-1" is defined twice: in ${join(dir, 'connector.yaml')}:2 and in ${join(dir, 'conf.d/a.yaml')}:3`);
  });

  it('conf.d files hold only datasets', async () => {
    expect(await issuesOf({ 'connector.yaml': one('shop-1'), 'conf.d/a.yaml': 'timezone: UTC\n' })).toEqual([
      { file: 'conf.d/a.yaml', line: 1, path: 'timezone', message: 'only datasets: may appear in a conf.d file; move "timezone" to connector.yaml' },
    ]);
  });

  it('rules: plain http to a remote host, unknown time zone, /api/v1 in base_url', async () => {
    const text = `timezone: Mars/Olympus\n${one('shop-1')}`
      .replace('http://127.0.0.1:8787', 'http://api.example.com/api/v1/business-datasets/x');
    const issues = await issuesOf({ 'connector.yaml': text });
    expect(issues.map((i) => [i.line, i.path])).toEqual([
      [1, 'timezone'],
      [5, 'datasets.shop-1.api.base_url'],
      [5, 'datasets.shop-1.api.base_url'],
    ]);
    expect(issues.map((i) => i.message).join('\n')).toMatch(/IANA[\s\S]*https:\/\/[\s\S]*adds \/api\/v1/);
  });

  it('rules: two entries for one remote dataset', async () => {
    const text = `datasets:\n${datasetYaml('shop-1')}\n${datasetYaml('shop-2', '      dataset_id: shop-1').replace(/(\n {6}dataset_id: shop-1)$/, '')}`;
    const withId = text.replace('  shop-2:\n    api:\n', '  shop-2:\n    api:\n      dataset_id: shop-1\n');
    const issues = await issuesOf({ 'connector.yaml': withId });
    expect(issues).toEqual([
      { file: 'connector.yaml', line: 15, path: 'datasets.shop-2.api.dataset_id', message: expect.stringMatching(/same remote dataset as "shop-1"/) },
    ]);
  });

  it('reports every problem at once, in file and line order', async () => {
    const text = `bogus: 1\nlog: { level: loud }\n${one('shop-1', '    policy:\n      ownership: mine')}`;
    const issues = await issuesOf({ 'connector.yaml': text });
    expect(issues.map((i) => i.path)).toEqual(['bogus', 'log.level', 'datasets.shop-1.policy.ownership']);
    expect(issues.map((i) => i.line)).toEqual([1, 2, 16]);
  });
});
