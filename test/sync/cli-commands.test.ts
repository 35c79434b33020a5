import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { silentLogger } from '../../src/log/logger.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { openStateDb } from '../../src/snapshot/db.js';
import { cliEngine } from '../../src/cli/engine.js';
import { runCli, runCliTty } from './cli-child.js';
import { recs } from './harness.js';

/** plan, status, discard and approve as a person runs them: the built CLI in a child process, against the emulator. */

const KEY = 'tbd_live_cli_commands_test_key_000';
const env = { CLI_TEST_KEY: KEY };
let em: RunningEmulator;
let config: string;
let held: string;

async function writeExport(dir: string, name: string, records: DatasetRecord[]): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, ['SKU,Name,Code', ...records.map((r) => `${r.record_id},${r.display_name},${r.api_value}`)].join('\n') + '\n');
  return file;
}

/** A sync in this process over the CLI's wiring (the commands under test run as children). */
async function syncHere(file: string) {
  process.env.CLI_TEST_KEY = KEY;
  const cli = await cliEngine(await loadConfig(config), silentLogger(), ['shop-1']);
  try {
    return await cli.engine.sync(cli.dataset('shop-1'), { file });
  } finally {
    await cli.close();
  }
}

const cli = (...args: string[]) => runCli(['--config', config, ...args], env);
const tty = (...args: string[]) => runCliTty(['--config', config, ...args], env);

beforeAll(async () => {
  em = await startEmulator();
  em.emulator.addDataset({ id: 'shop-1', records: recs(9) });
  em.emulator.addKey({ dataset: 'shop-1', key: KEY, roles: ['read', 'write', 'replace', 'publish'] });
  const dir = await mkdtemp(join(tmpdir(), 'dc-cli-'));
  config = join(dir, 'connector.yaml');
  await writeFile(
    config,
    `state_dir: ${join(dir, 'state')}\ntimezone: Asia/Tokyo\ndatasets:\n  shop-1:\n    api:\n      base_url: ${em.url}\n      key: { env: CLI_TEST_KEY }\n` +
      `    source: { type: csv }\n    mapping:\n      fields: { record_id: SKU, display_name: Name, api_value: Code }\n` +
      `    schedules:\n      - { type: reconcile, cron: "0 3 * * *" }\n`,
  );
  // Adopt nine, add the tenth: its staged write shows that the key stages, so a held change becomes a draft (issue 11).
  expect((await syncHere(await writeExport(dir, 'all.csv', recs(10)))).result).toBe('published');
  held = await writeExport(dir, 'fewer.csv', recs(7, 4)); // r-001…r-003 gone: 30% of the owned records
});
afterAll(async () => {
  delete process.env.CLI_TEST_KEY;
  await em?.close();
});

describe('CLI: plan, status, discard, approve (child processes)', () => {
  it('plan prints counts, the first changes, the path and why, and the guard that would hold; it sends only reads', async () => {
    em.emulator.clearRequests();
    const before = { ...em.emulator.counters };
    // On a terminal: the text for a person (piped it is JSON, issue 17).
    const r = await tty('plan', 'shop-1', '--file', held);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('(7 rows, 0 row errors)');
    expect(r.stdout).toContain('changes: 0 add, 0 change, 3 delete (7 unchanged)');
    expect(r.stdout).toContain('records: 10 now → 7 after; owned 7, not owned 0');
    expect(r.stdout).toMatch(/^path: per_record — per-record [\d.]+ s ≤ replace/m);
    expect(r.stdout).toMatch(/^ {2}delete r-001\n {2}delete r-002\n {2}delete r-003$/m);
    expect(r.stdout).toMatch(/guards that would hold it: max_delete_ratio \(deletes 3 of 10 deletable records \(30\.0%; limit 20\.0%\)\)/);
    expect(em.emulator.requests.length).toBeGreaterThan(0);
    expect(em.emulator.requests.filter((q) => q.method !== 'GET')).toEqual([]);
    expect(em.emulator.counters).toEqual(before);
  });

  it('status --json shows the held draft with its age and the next scheduled run; discard drops it; approve publishes it', async () => {
    expect((await syncHere(held)).result).toBe('held');
    const v1 = em.emulator.describe('shop-1').draft_version!;
    const st = await cli('status', '--json');
    expect(st.status, st.stderr).toBe(3); // something waits for a person
    const [ds] = (JSON.parse(st.stdout) as { datasets: Array<Record<string, any>> }).datasets;
    expect(ds).toMatchObject({ dataset: 'shop-1', records: 10, owned: 10, lastSync: { result: 'held' }, held: { kind: 'guard', version: v1 } });
    expect(ds!.held.ageMs).toBeGreaterThanOrEqual(0);
    expect(ds!.held.reason).toMatch(/max_delete_ratio/);
    expect(ds!.nextRun).toMatchObject({ schedule: 'reconcile-1', type: 'reconcile' });
    expect(Date.parse(ds!.nextRun.at)).toBeGreaterThan(Date.now() - 1000);

    const d = await cli('discard', 'shop-1');
    expect(d.status, d.stderr).toBe(0);
    // Piped: one JSON object (issue 17); on a terminal the same as a line.
    expect(JSON.parse(d.stdout)).toMatchObject({ dataset: 'shop-1', action: 'discarded', version: v1, message: `discarded draft ${v1}` });
    expect(em.emulator.describe('shop-1').draft_version).toBeNull();
    expect(em.emulator.records('shop-1')).toHaveLength(10);

    expect((await syncHere(held)).result).toBe('held');
    const v2 = em.emulator.describe('shop-1').draft_version!;
    const a = await cli('approve', 'shop-1');
    expect(a.status, a.stderr).toBe(0);
    expect(JSON.parse(a.stdout)).toMatchObject({ dataset: 'shop-1', action: 'published', version: v2, message: `published version ${v2}` });
    expect(em.emulator.records('shop-1')).toEqual(recs(7, 4));

    const after = await cli('status', '--json');
    expect(after.status, after.stderr).toBe(0);
    expect(JSON.parse(after.stdout).datasets[0]).toMatchObject({ activeVersion: v2, records: 7, held: null, lastSync: { result: 'published' } });
  });

  it('a command meeting a dataset the daemon works on waits a bounded time, then says so and exits 75', async () => {
    const db = openStateDb(join(dirname(config), 'state', 'state.db'));
    try {
      const daemon = { id: 'daemon-under-test', pid: process.pid, host: hostname(), label: 'the daemon' };
      expect(db.locks.tryAcquire('shop-1', daemon, 'sync', Date.now(), 60_000)).toBeNull();
      const busyEnv = { ...env, DATASET_CONNECTOR_LOCK_WAIT_MS: '200' };
      const before = em.emulator.requests.length;
      const sync = await runCli(['--config', config, 'sync', 'shop-1', '--file', held], busyEnv);
      expect(sync.status, sync.stderr).toBe(75);
      expect(sync.stderr).toContain(`the daemon (pid ${process.pid}) is working on shop-1; try again`);
      const approve = await runCli(['--config', config, 'approve', 'shop-1'], busyEnv);
      expect(approve.status, approve.stderr).toBe(75);
      expect(approve.stderr).toContain(`the daemon (pid ${process.pid}) is working on shop-1; try again`);
      expect(em.emulator.requests.length).toBe(before); // nothing was sent
      db.locks.release('shop-1', daemon.id);
    } finally {
      db.close();
    }
  });
});
