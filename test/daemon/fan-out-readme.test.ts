import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { capture, daemonFixture, drop, ManualClock, waitEvent } from './service-harness.js';

const ROOT = join(import.meta.dirname, '../..');

/** The YAML example of README's chain section. */
async function readmeChain(): Promise<Record<string, any>> {
  const text = await readFile(join(ROOT, 'README.md'), 'utf8');
  const section = text.slice(text.indexOf('#### One export, several datasets'));
  return parse(/```yaml\n([\s\S]*?)```/.exec(section)![1]!) as Record<string, any>;
}

const item = (id: string, stock: number): DatasetRecord => ({ record_id: id, display_name: `Item ${id}`, api_value: id, aliases: [], attributes: { stock }, active: true });

describe("README's chain example (one export, several datasets)", () => {
  const fx = daemonFixture();

  it('runs: one head-office file sets store-001\'s stock from its rows and store-002\'s from its column', async () => {
    const cfg = await readmeChain();
    const dir = await mkdtemp(join(tmpdir(), 'dc-readme-chain-'));
    const inbox = join(dir, 'ho');
    await mkdir(inbox);
    // The example as written, pointed at this machine: the emulator, its keys, a temp folder; the seeded items are the
    // stores' own (ownership: full), since an update feed only changes records that are there.
    cfg.exports['head-office-stock'].watch = { ...cfg.exports['head-office-stock'].watch, path: inbox, settle_ms: 100, poll_interval_ms: 30 };
    const env: NodeJS.ProcessEnv = {};
    for (const name of ['store-001', 'store-002']) {
      const id = `readme-${name}`;
      fx.emu.emulator.addDataset({ id, records: [item('A1', 0), item('B1', 0)] });
      env[`KEY_${name.replace('-', '_')}`] = fx.emu.emulator.addKey({ dataset: id });
      cfg.datasets[name].api = { base_url: fx.emu.url, dataset_id: id, key: { env: `KEY_${name.replace('-', '_')}` } };
      cfg.datasets[name].policy = { staging: false, ownership: 'full' };
    }
    const configPath = join(dir, 'connector.yaml');
    await writeFile(configPath, stringify({ ...cfg, state_dir: join(dir, 'state') }));
    const log = capture();
    const service = await Service.start({ configPath, logger: log.logger, env, clock: new ManualClock() });
    fx.services.push(service);

    await drop(inbox, 'stock-1.csv', ['SKU,Store,Qty,Stock_002', 'A1,001,5,7', 'B1,001,6,8', 'C9,002,1,9'].join('\n') + '\n');
    const done = await waitEvent(log.lines, 'file.processed', { export: 'head-office-stock' });
    expect(done.takers).toEqual(['store-001: published', 'store-002: published']);
    const stock = (id: string) => Object.fromEntries(fx.emu.emulator.records(id).map((r) => [r.record_id, (r.attributes as { stock?: unknown }).stock]));
    expect(stock('readme-store-001')).toEqual({ A1: 5, B1: 6 });
    // store-002 takes every row (no rows:) and its own column; C9 is no item of it: counted as unmatched, not an error.
    expect(stock('readme-store-002')).toEqual({ A1: '7', B1: '8' });
    expect(await readdir(inbox)).toEqual(['processed']);
  });
});
