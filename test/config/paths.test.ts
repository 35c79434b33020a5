import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/index.js';
import { resolveKeyDetailed } from '../../src/config/key.js';
import { datasetYaml, tempFiles } from './helpers.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('loadConfig: relative paths are taken from the folder of the YAML file that sets them', () => {
  it('top-level options from connector.yaml\'s folder, dataset options from their own file\'s folder', async () => {
    const main = [
      'state_dir: var/state',
      'demo:',
      '  sample_export_dir: ./samples',
      'datasets:',
      datasetYaml('shop-1'),
      '    watch:',
      '      path: ../exports/shop-1',
      '      processed_dir: done',
      '      failed_dir: /srv/failed',
      '    schedules:',
      '      - { type: reread, cron: "0 3 * * *", path: exports/fixed.csv }',
      '      - { type: command, cron: "0 4 * * *", command: [./bin/export, --out, out.csv], output_file: out.csv }',
      '      - { type: command, cron: "0 5 * * *", command: [pos-export, ./arg], cwd: work, output_file: out/x.csv }',
      '      - { type: command, cron: "0 6 * * *", command: [bin/export], cwd: /opt/pos, output_file: /tmp/x.csv }',
      '',
    ].join('\n');
    const extra = ['datasets:', datasetYaml('shop-2'), '    watch: { path: inbox-2 }', '    schedules:', '      - { type: reread, cron: "* * * * *", path: /abs/file.csv }', ''].join('\n');
    const dir = await tempFiles({ 'etc/connector.yaml': main, 'etc/conf.d/shop-2.yaml': extra });
    const etc = join(dir, 'etc');
    const config = await loadConfig(join(etc, 'connector.yaml'));

    expect(config.state_dir).toBe(join(etc, 'var/state'));
    expect(config.demo?.sample_export_dir).toBe(join(etc, 'samples'));
    const one = config.datasets['shop-1']!;
    // processed_dir stays relative to watch.path (now absolute); an absolute failed_dir is kept.
    expect(one.watch).toMatchObject({ path: join(dir, 'exports/shop-1'), processed_dir: 'done', failed_dir: '/srv/failed' });
    expect(one.schedules).toEqual([
      expect.objectContaining({ type: 'reread', path: join(etc, 'exports/fixed.csv') }),
      // No cwd: the program and the output file from the YAML's folder; arguments as written.
      expect.objectContaining({ type: 'command', command: [join(etc, 'bin/export'), '--out', 'out.csv'], output_file: join(etc, 'out.csv') }),
      // A relative cwd from the YAML's folder; output_file from cwd, as the command sees it; a bare program stays for PATH.
      expect.objectContaining({ type: 'command', command: ['pos-export', './arg'], cwd: join(etc, 'work'), output_file: join(etc, 'work/out/x.csv') }),
      expect.objectContaining({ type: 'command', command: ['/opt/pos/bin/export'], cwd: '/opt/pos', output_file: '/tmp/x.csv' }),
    ]);
    expect(one.schedules[1]).not.toHaveProperty('cwd');

    const two = config.datasets['shop-2']!;
    expect(two.watch?.path).toBe(join(etc, 'conf.d/inbox-2'));
    expect(two.schedules[0]).toMatchObject({ path: '/abs/file.csv' });
  });

  it('absent options stay absent and defaults stay as they are', async () => {
    const dir = await tempFiles({ 'connector.yaml': `datasets:\n${datasetYaml('shop-1')}\n` });
    const config = await loadConfig(join(dir, 'connector.yaml'));
    expect(config.state_dir).toBe('/var/lib/dataset-connector');
    expect(config.demo).toBeUndefined();
    expect(config.datasets['shop-1']!.watch).toBeUndefined();
  });

  it('an empty path is still reported, not turned into the folder', async () => {
    const dir = await tempFiles({ 'connector.yaml': `state_dir: ""\ndatasets:\n${datasetYaml('shop-1')}\n    watch: { path: "" }\n` });
    const err = await loadConfig(join(dir, 'connector.yaml')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).issues.map((i) => i.path)).toEqual(['state_dir', 'datasets.shop-1.watch.path']);
  });

  it('key files from the folder of the file that sets them: a dataset\'s from its own file, call alerts\' from connector.yaml (README: relative paths)', async () => {
    const alerts = 'alerts:\n  call: { to: "+81312345678", base_url: "https://a2a.example.com", key: { file: keys/a2a } }\n';
    const text = `${alerts}datasets:\n${datasetYaml('shop-1').replace('key: { env: SHOP_1_KEY }', 'key: { file: keys/shop-1 }')}\n`;
    const extra = `datasets:\n${datasetYaml('shop-2').replace('key: { env: SHOP_2_KEY }', 'key: "file:../keys/shop-2"')}\n`;
    const key = 'tbd_live_abcdefghabcdefgh\n';
    const dir = await tempFiles({ 'etc/connector.yaml': text, 'etc/conf.d/shop-2.yaml': extra, 'etc/keys/a2a': key, 'etc/keys/shop-1': key, 'etc/keys/shop-2': key });
    const etc = join(dir, 'etc');
    // Run from another folder: the service's working folder is rarely the config's.
    const config = await loadConfig(join(etc, 'connector.yaml'), { local: true });
    expect(config.alerts?.call?.key.file).toBe(join(etc, 'keys/a2a'));
    expect(config.datasets['shop-1']!.api.key.file).toBe(join(etc, 'keys/shop-1'));
    expect(config.datasets['shop-2']!.api.key.file).toBe(join(etc, 'keys/shop-2'));
    expect((await resolveKeyDetailed(config.datasets['shop-2']!.api.key)).secret.reveal()).toBe('tbd_live_abcdefghabcdefgh');
    // Absolute ones are kept as written.
    const abs = await tempFiles({ 'connector.yaml': `datasets:\n${datasetYaml('shop-1').replace('key: { env: SHOP_1_KEY }', `key: { file: ${join(etc, 'keys/shop-1')} }`)}\n` });
    expect((await loadConfig(join(abs, 'connector.yaml'))).datasets['shop-1']!.api.key.file).toBe(join(etc, 'keys/shop-1'));
  });

  it('the shipped demo watches var/inbox/ at the top of the package and copies config/sample-export/', async () => {
    const config = await loadConfig(join(root, 'config/demo.yaml'));
    expect(config.datasets['demo-shop']!.watch?.path).toBe(join(root, 'var/inbox'));
    expect(config.demo?.sample_export_dir).toBe(join(root, 'config/sample-export'));
    expect(existsSync(config.demo!.sample_export_dir!)).toBe(true);
  });
});
