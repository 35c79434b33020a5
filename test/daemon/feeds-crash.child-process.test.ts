import { mkdir, mkdtemp, readdir, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { runCli } from '../sync/cli-child.js';

/**
 * Issue 13's coalescing is crash-safe: `run --once` (the built CLI) is killed
 * with SIGKILL right after the coalesced plan of three stock files journaled
 * its publish intent. The files stay in the folder; the next run finishes the
 * plan (one publish, not two), takes the files again (their values are
 * already there: nothing is sent twice) and archives them.
 */

const KEY = 'tbd_live_feeds_crash_key_000000000000';
let emu: RunningEmulator;
beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
});
afterAll(async () => {
  await emu.close();
});

describe('daemon: SIGKILL in a coalesced plan of several files', () => {
  for (const step of ['plan.begun', 'publish.intent']) {
    it(`killed after ${step}: the next run publishes each file's values once, nothing lost or doubled`, async () => {
      const id = `crash-${step.replace('.', '-')}`;
      emu.emulator.addDataset({ id });
      emu.emulator.addKey({ dataset: id, key: KEY });
      const dir = await mkdtemp(join(tmpdir(), 'dc-feeds-crash-'));
      const main = join(dir, 'main');
      const stock = join(dir, 'stock');
      await mkdir(main);
      await mkdir(stock);
      const config = join(dir, 'connector.yaml');
      const watch = (p: string) => `{ path: ${p}, include: ["*.csv"], settle_ms: 0 }`;
      await writeFile(
        config,
        `state_dir: ${join(dir, 'state')}\ndatasets:\n  ${id}:\n    api: { base_url: ${emu.url}, dataset_id: ${id}, key: { env: CRASH_KEY } }\n    policy: { staging: true }\n    feeds:\n` +
          `      main:\n        role: full\n        source: { type: csv }\n        mapping: { fields: { record_id: sku, display_name: name, api_value: sku } }\n        watch: ${watch(main)}\n` +
          `      stock:\n        role: update\n        source: { type: csv }\n        mapping: { fields: { record_id: sku, attributes.stock: { column: qty, transforms: [integer] } } }\n        watch: ${watch(stock)}\n`,
      );
      const env = { CRASH_KEY: KEY };
      await writeFile(join(main, 'catalogue.csv'), 'sku,name\nP-1,Apple\nP-2,Pear\nP-3,Plum\n');
      expect((await runCli(['run', '--once', '--config', config], env)).status).toBe(0);
      const base = emu.emulator.describe(id).active_version;

      const t0 = Date.now() / 1000 - 60;
      const files: Array<[string, string]> = [
        ['s1.csv', 'sku,qty\nP-1,1\nP-2,1\n'],
        ['s2.csv', 'sku,qty\nP-2,2\nP-3,2\n'],
        ['s3.csv', 'sku,qty\nP-3,3\n'],
      ];
      for (const [i, [name, text]] of files.entries()) {
        await writeFile(join(stock, name), text);
        await utimes(join(stock, name), t0 + i, t0 + i);
      }
      const killed = await runCli(['run', '--once', '--config', config], { ...env, DATASET_CONNECTOR_CRASH_AT: step });
      expect(killed.signal).toBe('SIGKILL');
      expect((await readdir(stock)).sort()).toEqual(['s1.csv', 's2.csv', 's3.csv']);

      const again = await runCli(['run', '--once', '--config', config], env);
      expect(again.status, again.stderr + again.stdout.slice(-3000)).toBe(0);
      const stocks = Object.fromEntries(emu.emulator.records(id).map((r) => [r.record_id, (r.attributes as { stock?: number }).stock]));
      expect(stocks).toEqual({ 'P-1': 1, 'P-2': 2, 'P-3': 3 });
      // One publish for the three files, whether the restart finished the plan or planned it anew.
      expect(emu.emulator.describe(id).active_version).toBe(base + 1);
      expect((await readdir(stock)).filter((n) => n.endsWith('.csv'))).toEqual([]);
      expect((await readdir(join(stock, 'processed'))).length).toBe(3);
    });
  }
});
