import { chmod, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, type ConfigIssue } from '../../src/config/index.js';
import { resolveKeyDetailed } from '../../src/config/key.js';
import { ConnectorError } from '../../src/errors.js';
import { datasetYaml, tempFiles } from './helpers.js';

/** The issues of loading `text` as connector.yaml (files relative to the temp folder). */
async function issues(text: string, opts: { local?: boolean } = {}, extra: Record<string, string> = {}): Promise<ConfigIssue[]> {
  const dir = await tempFiles({ 'connector.yaml': text, ...extra });
  try {
    await loadConfig(join(dir, 'connector.yaml'), opts);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.issues.map((i) => ({ ...i, file: i.file.slice(dir.length + 1) }));
  }
  throw new Error('expected a ConfigError');
}

const one = (extra = '') => `datasets:\n${datasetYaml('shop-1', extra)}\n`;

// Issue 17: each broken config gets `file:line: option: what is wrong (expected …)`.
describe('configuration messages a person can act on', () => {
  it('a missing key source names credential, file and env', async () => {
    expect(await issues(one().replace('key: { env: SHOP_1_KEY }', 'key: {}'))).toEqual([
      {
        file: 'connector.yaml',
        line: 5,
        path: 'datasets.shop-1.api.key',
        message: expect.stringMatching(/^no key source given \(expected at least one of credential: .*, file: .* or env: .*\)$/),
      },
    ]);
  });

  it('a key pasted into the YAML: put it in a file and use key: { file: … }; the key is never echoed', async () => {
    const found = await issues(one().replace('key: { env: SHOP_1_KEY }', 'key: tbd_live_pastedpastedpasted'));
    expect(found).toEqual([{ file: 'connector.yaml', line: 5, path: 'datasets.shop-1.api.key', message: expect.stringContaining('key: { file: /etc/dataset-connector/keys/') }]);
    expect(found[0]!.message).toMatch(/must not be written in the configuration/);
    expect(JSON.stringify(found)).not.toContain('pasted');
  });

  it('a duplicate YAML key is named with its option path', async () => {
    expect(await issues(one().replace('      type: csv', '      type: csv\n      type: xlsx'))).toEqual([
      { file: 'connector.yaml', line: 8, path: 'datasets.shop-1.source.type', message: 'option "type" is written twice in the same mapping (expected it once: keep one and delete the other)' },
    ]);
  });

  it('tabs used for indentation: one message naming the lines, not one per parser error', async () => {
    const text = one().replace('    source:\n      type: csv', '\tsource:\n\t  type: csv');
    expect(await issues(text)).toEqual([
      { file: 'connector.yaml', line: 6, path: '', message: expect.stringMatching(/^not valid YAML: tabs are used for indentation on lines 6, 7 \(expected spaces/) },
    ]);
  });

  it.each([
    ['0 25 * * *', 'the hour field "25" is not valid (expected hour 0-23'],
    ['61 * * * *', 'the minute field "61" is not valid (expected minute 0-59'],
    ['0 3 0 * *', 'the day of month field "0" is not valid (expected day of month 1-31'],
    ['0 3 * 13 *', 'the month field "13" is not valid (expected month 1-12 or jan-dec'],
    ['0 3 * * 9', 'the day of week field "9" is not valid (expected day of week 0-7'],
    ['0 3 * *', 'expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got 4'],
  ])('a cron expression "%s" names the field and its range', async (cron, message) => {
    const found = await issues(one(`    schedules:\n      - { type: reconcile, cron: "${cron}" }`));
    expect(found).toEqual([{ file: 'connector.yaml', line: 14, path: 'datasets.shop-1.schedules.0.cron', message: expect.stringContaining(message) }]);
  });

  it('health.listen off loopback is a warning that /healthz and /metrics are unauthenticated; loopback is not', async () => {
    const dir = await tempFiles({ 'connector.yaml': `timezone: UTC\nhealth: { listen: "0.0.0.0:9464" }\n${one()}` });
    const config = await loadConfig(join(dir, 'connector.yaml'));
    expect(config.warnings).toEqual([
      { file: join(dir, 'connector.yaml'), line: 2, path: 'health.listen', message: expect.stringMatching(/^0\.0\.0\.0:9464 can be reached from other machines, and \/healthz and \/metrics answer anyone without authentication \(expected 127\.0\.0\.1/) },
    ]);
    for (const listen of ['127.0.0.1:9464', '127.0.1.1:9464', 'localhost:9464', '[::1]:9464']) {
      const ok = await tempFiles({ 'connector.yaml': `health: { listen: "${listen}" }\n${one()}` });
      expect((await loadConfig(join(ok, 'connector.yaml'))).warnings).toEqual([]);
    }
  });
});

describe('loadConfig with local checks (validate): what would make the service useless', () => {
  it('a key file group or others can read, with the chmod to run', async () => {
    const dir = await tempFiles({ key: 'tbd_live_abcdefgh' }, { key: 0o640 });
    const text = one().replace('key: { env: SHOP_1_KEY }', `key: { file: ${join(dir, 'key')} }`);
    await expect(loadConfig(join(await tempFiles({ 'connector.yaml': text }), 'connector.yaml'))).resolves.toBeDefined();
    const found = await issues(text, { local: true });
    expect(found).toEqual([
      {
        file: 'connector.yaml',
        line: 5,
        path: 'datasets.shop-1.api.key.file',
        message: `key file ${join(dir, 'key')} can be read or written by group or others (mode 0640; expected 0600, the service user's alone): run chmod 600 ${join(dir, 'key')}, and reissue the key if others may have read it`,
      },
    ]);
    await chmod(join(dir, 'key'), 0o600);
    const fixed = await tempFiles({ 'connector.yaml': text });
    await expect(loadConfig(join(fixed, 'connector.yaml'), { local: true })).resolves.toBeDefined();
  });

  it('a key file that is missing, or that cannot be reached, names file:line, unless the key comes from elsewhere', async () => {
    const dir = await tempFiles({ 'not-a-folder': 'x', key: 'tbd_live_abcdefgh' });
    const withFile = (key: string) => one().replace('key: { env: SHOP_1_KEY }', `key: ${key}`);
    for (const [file, what] of [
      [join(dir, 'missing'), 'does not exist'],
      [join(dir, 'not-a-folder/key'), 'cannot be reached by this user (ENOTDIR)'],
    ] as const) {
      expect(await issues(withFile(`{ file: ${file} }`), { local: true })).toEqual([
        { file: 'connector.yaml', line: 5, path: 'datasets.shop-1.api.key.file', message: `key file ${file} ${what} (expected a file holding only the key, readable by the service user alone: write the key to it and chmod 600 it, or fix the path)` },
      ]);
    }
    // Relative: named as resolved, from the YAML's folder.
    const found = await issues(withFile('{ file: keys/shop-1 }'), { local: true });
    expect(found).toEqual([{ file: 'connector.yaml', line: 5, path: 'datasets.shop-1.api.key.file', message: expect.stringMatching(/^key file \/.*\/keys\/shop-1 does not exist \(/) }]);
    expect(await issues(withFile(`{ file: ${dir} }`), { local: true })).toEqual([
      { file: 'connector.yaml', line: 5, path: 'datasets.shop-1.api.key.file', message: `key file ${dir} is not a file (expected a file holding only the key: fix the path)` },
    ]);
    // An absent file with the variable set: resolveKey reads the variable instead.
    const varName = 'DC_TEST_KEY_FALLBACK';
    process.env[varName] = 'tbd_live_fromenv';
    try {
      await expect(loadConfig(join(await tempFiles({ 'connector.yaml': withFile(`{ file: ${join(dir, 'missing')}, env: ${varName} }`) }), 'connector.yaml'), { local: true })).resolves.toBeDefined();
    } finally {
      delete process.env[varName];
    }
    expect(await issues(withFile(`{ file: ${join(dir, 'missing')}, env: ${varName} }`), { local: true })).toHaveLength(1);
    // Call alerts switched off: the service never reads that key.
    const off = 'alerts:\n  call: { enabled: false, to: "+81312345678", base_url: "https://a2a.example.com", key: { file: keys/a2a } }\n';
    await expect(loadConfig(join(await tempFiles({ 'connector.yaml': `${off}${one()}` }), 'connector.yaml'), { local: true })).resolves.toBeDefined();
    expect(await issues(`${off.replace('enabled: false, ', '')}${one()}`, { local: true })).toEqual([
      { file: 'connector.yaml', line: 2, path: 'alerts.call.key.file', message: expect.stringContaining('/keys/a2a does not exist (') },
    ]);
  });

  it('a watch folder that does not exist, or is a file', async () => {
    const dir = await tempFiles({ 'not-a-folder': 'x' });
    for (const [path, what] of [
      [join(dir, 'missing'), 'does not exist'],
      [join(dir, 'not-a-folder'), 'is not a folder'],
    ] as const) {
      const found = await issues(one(`    watch: { path: ${path} }`), { local: true });
      expect(found).toEqual([
        { file: 'connector.yaml', line: 13, path: 'datasets.shop-1.watch.path', message: expect.stringContaining(`folder ${path} ${what} (expected the export folder`) },
      ]);
    }
    // Without the local checks (run, reload) a missing folder is not a configuration error: the daemon waits for it.
    const later = await tempFiles({ 'connector.yaml': one(`    watch: { path: ${join(dir, 'missing')} }`) });
    await expect(loadConfig(join(later, 'connector.yaml'))).resolves.toBeDefined();
  });
});

describe('a key file with more than the key', () => {
  it('a line break followed by more text is KEY_MALFORMED, naming the file, never the key', async () => {
    const dir = await tempFiles({});
    const file = join(dir, 'key');
    await writeFile(file, 'tbd_live_firstpartfirstpart\nsomething else\n', { mode: 0o600 });
    const err = await resolveKeyDetailed({ file }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectorError);
    expect(err).toMatchObject({ code: 'KEY_MALFORMED', action: 'stop' });
    expect((err as Error).message).toBe(`the key in file ${file} is malformed: it holds more than one line (expected only the key, tbd_live_…, on one line): write the key alone to it`);
    // A trailing line break (what editors write) is fine.
    await writeFile(file, 'tbd_live_firstpartfirstpart\n', { mode: 0o600 });
    expect((await resolveKeyDetailed({ file })).secret.reveal()).toBe('tbd_live_firstpartfirstpart');
  });
});
