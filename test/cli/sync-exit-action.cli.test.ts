import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { recs } from '../sync/harness.js';
import { runCli } from './run-cli.js';

/**
 * `sync` exits by the action of its failure (carried in the summary), not by
 * a list of codes: any failure that may pass by itself is 75, whatever the
 * server called it. The built CLI in a child process against the emulator.
 */

const KEY = 'tbd_live_cli_exit_action_00001';
const env = { SHOP_1_KEY: KEY };
let dir: string;
let em: RunningEmulator;

async function config(datasetId: string): Promise<string> {
  const file = join(dir, `connector-${datasetId}.yaml`);
  await writeFile(
    file,
    `state_dir: ${join(dir, `state-${datasetId}`)}\ndatasets:\n  shop-1:\n    api:\n      base_url: ${em.url}\n      dataset_id: ${datasetId}\n      key: { env: SHOP_1_KEY }\n` +
      `      retry: { max_attempts: 2, base_delay_ms: 1, max_delay_ms: 5 }\n` +
      `    source: { type: csv }\n    mapping:\n      fields: { record_id: SKU, display_name: Name, api_value: Code }\n`,
  );
  return file;
}

async function exportOf(n: number): Promise<string> {
  const file = join(dir, 'stock.csv');
  await writeFile(file, ['SKU,Name,Code', ...recs(n).map((r) => `${r.record_id},${r.display_name},${r.api_value}`)].join('\n') + '\n');
  return file;
}

/** The sync.summary line of a run's JSON log. */
function summaryLine(stdout: string): Record<string, unknown> {
  const lines = stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
  const found = lines.filter((l) => l.event === 'sync.summary');
  expect(found).toHaveLength(1);
  return found[0]!;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dc-cli-exit-action-'));
  em = await startEmulator();
  em.emulator.addDataset({ id: 'shop-1', records: recs(3) });
  em.emulator.addKey({ dataset: 'shop-1', key: KEY, roles: ['read', 'write', 'replace', 'publish'] });
});
afterAll(async () => {
  await em?.close();
});

describe('sync: exit code by the action in the summary', () => {
  it('a 5xx with a code of the server\'s own (action retry) exits 75 and says to try again; the summary line carries the action', async () => {
    const fault = em.emulator.faults.add({ path: /shop-1/, status: 503, code: 'MAINTENANCE', count: Infinity });
    try {
      const r = await runCli(['--config', await config('shop-1'), 'sync', 'shop-1', '--file', await exportOf(3)], env);
      expect(r.code, r.stderr).toBe(75);
      expect(r.stderr).toMatch(/^failed \[MAINTENANCE\] \(dataset shop-1, file .*stock\.csv\)/m);
      expect(r.stderr).toContain('run the command again later');
      // Compatible: every field it had, plus the action.
      expect(summaryLine(r.stdout)).toMatchObject({ event: 'sync.summary', msg: 'sync summary', dataset: 'shop-1', result: 'failed', code: 'MAINTENANCE', action: 'retry', adds: 0, requests: expect.any(Number) });
    } finally {
      em.emulator.faults.remove(fault);
    }
  });

  it('a dataset the key cannot see (action stop) exits 1 and says to fix the cause', async () => {
    const r = await runCli(['--config', await config('no-such-shop'), 'sync', 'shop-1', '--file', await exportOf(3)], env);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/^stopped \[\w+\]/m);
    expect(r.stderr).toContain('fix the cause above');
    expect(summaryLine(r.stdout)).toMatchObject({ result: 'stopped', action: 'stop' });
  });

  it('an export file that is not there exits 66 (EX_NOINPUT), not 75, naming the file; nothing is sent', async () => {
    const before = em.emulator.requests.length;
    const missing = join(dir, 'no-such-export.csv');
    const r = await runCli(['--config', await config('shop-1'), 'sync', 'shop-1', '--file', missing], env);
    expect(r.code, r.stderr).toBe(66);
    expect(r.stderr).toContain('no-such-export.csv');
    expect(summaryLine(r.stdout)).toMatchObject({ code: 'FILE_NOT_FOUND' });
    expect(em.emulator.requests.slice(before).filter((e) => e.method !== 'GET')).toEqual([]);
  });

  it('published: exit 0, action null in the summary line', async () => {
    const r = await runCli(['--config', await config('shop-1'), 'sync', 'shop-1', '--file', await exportOf(4)], env);
    expect(r.code, r.stderr).toBe(0);
    expect(summaryLine(r.stdout)).toMatchObject({ result: 'published', code: null, action: null, adds: 1 });
  });
});
