import { mkdir, mkdtemp, rename, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { Service } from '../../src/daemon/service.js';
import { capture, drop, exportCsv, freePort, waitEvent } from './service-harness.js';

// Demo mode (npm start): the embedded emulator must know a dataset that a SIGHUP reload adds.
describe('daemon: demo mode reload', () => {
  const services: Service[] = [];
  afterEach(async () => {
    await Promise.all(services.splice(0).map((s) => s.stop()));
  });

  it('creates a dataset added by a reload, with its key, in the embedded emulator, and syncs its folder', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dc-demo-'));
    const port = await freePort();
    const dataset = (name: string) => ({
      api: { base_url: `http://127.0.0.1:${port}`, dataset_id: name, key: { env: `DEMO_${name.toUpperCase()}_KEY` } },
      source: { type: 'csv' },
      mapping: { fields: { record_id: 'sku', display_name: 'name', api_value: 'code', 'attributes.stock': { column: 'stock', transforms: [{ integer: {} }] } } },
      policy: { staging: false },
      watch: { path: join(dir, name), include: ['*.csv'], settle_ms: 100, poll_interval_ms: 30 },
    });
    const configPath = join(dir, 'demo.yaml');
    const write = async (names: string[]) => {
      for (const n of names) await mkdir(join(dir, n), { recursive: true });
      const doc = { state_dir: join(dir, 'state'), timezone: 'UTC', demo: { emulator_port: port }, datasets: Object.fromEntries(names.map((n) => [n, dataset(n)])) };
      await writeFile(`${configPath}.tmp`, stringify(doc));
      await rename(`${configPath}.tmp`, configPath);
    };
    await write(['alpha']);
    const log = capture();
    // The demo puts the keys it makes up here; nothing is set beforehand.
    const env: NodeJS.ProcessEnv = {};
    const service = await Service.start({ configPath, logger: log.logger, env });
    services.push(service);
    expect(Object.keys(env)).toEqual(['DEMO_ALPHA_KEY']);

    await write(['alpha', 'beta']);
    expect(await service.reload()).toBe(true);
    expect(service.datasets.names()).toEqual(['alpha', 'beta']);
    expect(await waitEvent(log.lines, 'demo.dataset_added')).toMatchObject({ dataset: 'beta' });

    await drop(join(dir, 'beta'), 'stock.csv', exportCsv(3, 5));
    expect(await waitEvent(log.lines, 'sync.summary', { dataset: 'beta' })).toMatchObject({ result: 'published', adds: 3 });
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/business-datasets/beta/records`, { headers: { authorization: `Bearer ${env.DEMO_BETA_KEY}` } });
    expect(res.status).toBe(200);
    expect(JSON.stringify(await res.json())).toContain('P-0003');
  });

  it('a reload keeps a revoked key revoked and a key whose reissue grace ended dead: provisioning never re-adds a known key', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dc-demo-'));
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const dataset = (name: string) => ({
      api: { base_url: base, dataset_id: name, key: { env: `DEMO_${name.toUpperCase()}_KEY` } },
      source: { type: 'csv' },
      mapping: { fields: { record_id: 'sku', display_name: 'name', api_value: 'code' } },
    });
    const configPath = join(dir, 'demo.yaml');
    const doc = { state_dir: join(dir, 'state'), timezone: 'UTC', demo: { emulator_port: port }, datasets: { alpha: dataset('alpha'), beta: dataset('beta') } };
    await writeFile(configPath, stringify(doc));
    const env: NodeJS.ProcessEnv = {};
    const service = await Service.start({ configPath, logger: capture().logger, env });
    services.push(service);
    const admin = (path: string, body: unknown) =>
      fetch(`${base}/__emulator${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const status = async (name: string) =>
      (await fetch(`${base}/api/v1/business-datasets/${name}`, { headers: { authorization: `Bearer ${env[`DEMO_${name.toUpperCase()}_KEY`]}` } })).status;
    expect([await status('alpha'), await status('beta')]).toEqual([200, 200]);

    // In the portal: alpha's key is revoked; beta's is reissued with a one-minute grace, which then ends.
    expect((await admin('/keys/revoke', { key: env.DEMO_ALPHA_KEY })).status).toBe(200);
    expect((await admin('/keys/reissue', { key: env.DEMO_BETA_KEY, grace_ms: 60_000 })).status).toBe(201);
    expect((await admin('/clock/advance', { ms: 120_000 })).status).toBe(200);
    expect([await status('alpha'), await status('beta')]).toEqual([401, 401]);

    expect(await service.reload()).toBe(true);
    expect([await status('alpha'), await status('beta')]).toEqual([401, 401]);
  });
});
