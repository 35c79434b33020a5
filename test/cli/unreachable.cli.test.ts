import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { recs } from '../sync/harness.js';
import { runCli } from './run-cli.js';

/**
 * Every command that talks to the API exits 75 (EX_TEMPFAIL: try again) when
 * the API cannot be reached, after the client's retries, and says which
 * address failed and what to do. The built CLI in a child process.
 */

const KEY = 'tbd_live_cli_unreachable_0000001';
const env = { SHOP_1_KEY: KEY };
let dir: string;
let em: RunningEmulator;
let silent: Server;
let configs = 0;
const held: Socket[] = [];

/** A port on which nothing listens (bound, then closed again). */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as { port: number };
  await new Promise((r) => s.close(r));
  return port;
}

/** Write a configuration for `baseUrl` (few, short retries: the test waits for them) and return its path; every one uses the same state db. */
async function config(baseUrl: string): Promise<string> {
  const file = join(dir, `connector-${++configs}.yaml`);
  await writeFile(
    file,
    `state_dir: ${join(dir, 'state')}\ndatasets:\n  shop-1:\n    api:\n      base_url: ${baseUrl}\n      key: { env: SHOP_1_KEY }\n` +
      `      request_timeout_ms: 300\n      retry: { max_attempts: 2, base_delay_ms: 1, max_delay_ms: 5 }\n` +
      `    source: { type: csv }\n    mapping:\n      fields: { record_id: SKU, display_name: Name, api_value: Code }\n`,
  );
  return file;
}

async function exportOf(name: string, n: number, from = 1): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, ['SKU,Name,Code', ...recs(n, from).map((r) => `${r.record_id},${r.display_name},${r.api_value}`)].join('\n') + '\n');
  return file;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dc-cli-unreachable-'));
  em = await startEmulator();
  em.emulator.addDataset({ id: 'shop-1', records: recs(10) });
  em.emulator.addKey({ dataset: 'shop-1', key: KEY, roles: ['read', 'write', 'replace', 'publish'] });
  // A server that accepts connections and never answers: requests time out.
  silent = createServer((socket) => held.push(socket));
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
});
afterAll(async () => {
  for (const s of held) s.destroy();
  await new Promise((r) => silent?.close(r));
  await em?.close();
});

describe('CLI: the API cannot be reached', () => {
  it('sync and plan exit 75 on connection refused, naming the address, the errno and the setting to check', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const cfg = await config(url);
    const file = await exportOf('stock.csv', 3);
    for (const args of [['sync', 'shop-1', '--file', file], ['plan', 'shop-1', '--file', file]]) {
      const r = await runCli(['--config', cfg, '--log-level', 'silent', ...args], env);
      expect(r.code, `${args[0]}: ${r.stderr}`).toBe(75);
      expect(r.stderr, args[0]).toContain(`cannot reach ${url} (ECONNREFUSED) on GET /api/v1/business-datasets/shop-1`);
      expect(r.stderr, args[0]).toContain('check api.base_url and that this host can reach it');
      expect(r.stderr, args[0]).toContain('run the command again later');
      expect(r.stdout + r.stderr).not.toContain(KEY);
    }
  });

  it('sync exits 75 when the API accepts but never answers (timeouts after retries)', async () => {
    const url = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
    const r = await runCli(['--config', await config(url), '--log-level', 'silent', 'sync', 'shop-1', '--file', await exportOf('stock.csv', 3)], env);
    expect(r.code, r.stderr).toBe(75);
    expect(r.stderr).toMatch(/^failed \[TIMEOUT\] \(dataset shop-1, file .*stock\.csv\): no answer from http:\/\/127\.0\.0\.1:\d+ within 300 ms/m);
    expect(r.stderr).toContain('api.request_timeout_ms');
  });

  it('approve and discard of a held change exit 75 while the API is unreachable; status (no network) still shows it held', async () => {
    const reachable = await config(em.url);
    const adopt = await runCli(['--config', reachable, '--log-level', 'silent', 'sync', 'shop-1', '--file', await exportOf('all.csv', 10)], env);
    expect(adopt.code, adopt.stderr).toBe(0);
    const fewer = await runCli(['--config', reachable, '--log-level', 'silent', 'sync', 'shop-1', '--file', await exportOf('fewer.csv', 7, 4)], env);
    expect(fewer.code, fewer.stderr).toBe(3); // 30% deleted: max_delete_ratio holds it
    expect(fewer.stderr).toMatch(/^held \[HELD_GUARD\] \(dataset shop-1, file .*fewer\.csv\): .*max_delete_ratio/m);

    const url = `http://127.0.0.1:${await closedPort()}`;
    const down = await config(url);
    // Kept unsent (the key has not shown that it stages, issue 11): approve must send it, and cannot now;
    // the change stays held for the next approve, not half forgotten.
    const offline = await runCli(['--config', down, '--log-level', 'silent', 'approve', 'shop-1'], env);
    expect(offline.code, offline.stderr).toBe(75);
    expect(offline.stderr).toContain(`cannot reach ${url} (ECONNREFUSED)`);
    const still = await runCli(['--config', down, 'status', '--json'], env);
    expect(JSON.parse(still.stdout).datasets[0]).toMatchObject({ held: { kind: 'guard', version: null } });
    const sent = await runCli(['--config', reachable, '--log-level', 'silent', 'approve', 'shop-1'], env);
    expect(sent.code, sent.stderr).toBe(0);
    expect(em.emulator.records('shop-1')).toEqual(recs(7, 4));

    // Now the key has shown it stages: the next held change is a draft on the server.
    const fewest = await runCli(['--config', reachable, '--log-level', 'silent', 'sync', 'shop-1', '--file', await exportOf('fewest.csv', 4, 7)], env);
    expect(fewest.code, fewest.stderr).toBe(3);
    for (const command of ['approve', 'discard']) {
      const r = await runCli(['--config', down, '--log-level', 'silent', command, 'shop-1'], env);
      expect(r.code, `${command}: ${r.stderr}`).toBe(75);
      expect(r.stderr, command).toContain(`cannot reach ${url} (ECONNREFUSED)`);
      expect(r.stderr, command).toContain('run the command again later');
    }
    const st = await runCli(['--config', down, 'status', '--json'], env);
    expect(st.code, st.stderr).toBe(3);
    expect(JSON.parse(st.stdout).datasets[0]).toMatchObject({ held: { kind: 'guard', version: em.emulator.describe('shop-1').draft_version } });
    // Nothing was lost: once the API is back, the held change is approved.
    const ok = await runCli(['--config', reachable, '--log-level', 'silent', 'approve', 'shop-1'], env);
    expect(ok.code, ok.stderr).toBe(0);
    expect(em.emulator.records('shop-1')).toEqual(recs(4, 7));
  });
});
