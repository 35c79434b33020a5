import { mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { runCli } from './run-cli.js';

// Issue 11 point 6: links are kept out of watch folders; a file the operator names on the command line may be one.
const KEY = 'tbd_live_cli_sync_link_000001';
let dir: string;
let em: RunningEmulator;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dc-cli-link-'));
  em = await startEmulator();
  em.emulator.addDataset({ id: 'shop-1' });
  em.emulator.addKey({ dataset: 'shop-1', key: KEY, roles: ['read', 'write', 'replace', 'publish'] });
});
afterAll(async () => {
  await em?.close();
});

describe('sync --file through a symbolic link', () => {
  it('is followed: the operator named it', async () => {
    const config = join(dir, 'connector.yaml');
    await writeFile(
      config,
      `state_dir: ${join(dir, 'state')}\ndatasets:\n  shop-1:\n    api:\n      base_url: ${em.url}\n      dataset_id: shop-1\n      key: { env: SHOP_1_KEY }\n` +
        `    source: { type: csv }\n    mapping:\n      fields: { record_id: SKU, display_name: Name, api_value: Code }\n`,
    );
    await mkdir(join(dir, 'exports'));
    const real = join(dir, 'exports', 'stock-0412.csv');
    await writeFile(real, 'SKU,Name,Code\nA-1,Apple,a\nA-2,Pear,p\n');
    const link = join(dir, 'latest.csv');
    await symlink(real, link);
    const r = await runCli(['--config', config, 'sync', 'shop-1', '--file', link], { SHOP_1_KEY: KEY });
    expect(r.code, r.stderr).toBe(0);
    expect(em.emulator.records('shop-1').map((x) => x.record_id).sort()).toEqual(['A-1', 'A-2']);
  });
});
