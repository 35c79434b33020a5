import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  startEmulator,
  loadEmulatorSeed,
  emulatorSeedFromArgs,
  mergeEmulatorSeeds,
  createEmulatorClock,
  type RunningEmulator,
} from '../../src/emulator/index.js';
import { hasCode } from '../../src/errors.js';
import { admin, harness, rec, code } from './helpers.js';

describe('admin routes (/__emulator)', () => {
  it('datasets, keys, API switch, revocation and portal edits over HTTP', async () => {
    const h = await harness();
    expect((await admin(h, 'POST', '/datasets', { id: 'shop-9', name: 'Nine', records: [rec('a')] })).status).toBe(201);
    const { body } = await admin(h, 'POST', '/keys', { dataset: 'shop-9', roles: ['read', 'write'] });
    const url = `${h.url}/api/v1/business-datasets/shop-9`;
    const w = await h.call('POST', `${url}/records`, { key: body.key, body: rec('b') });
    expect(w.body).toMatchObject({ staged: true, publish_denied: true, version: 2 });
    const portal = await admin(h, 'POST', '/datasets/shop-9/portal-publish', { upsert: [rec('c')], delete: ['a'] });
    expect(portal.body.version).toBe(3);
    expect((await admin(h, 'GET', '/datasets/shop-9/records')).body.records.map((r: any) => r.record_id)).toEqual(['c']);
    expect((await admin(h, 'GET', '/datasets/shop-9/records?source=draft')).body.records.map((r: any) => r.record_id)).toEqual(['a', 'b']);
    await admin(h, 'POST', '/datasets/shop-9/api', { enabled: false });
    expect(code(await h.call('GET', url, { key: body.key }))).toBe('API_DISABLED');
    await admin(h, 'POST', '/datasets/shop-9/api', { enabled: true });
    await admin(h, 'POST', '/keys/revoke', { key: body.key });
    expect(code(await h.call('GET', url, { key: body.key }))).toBe('UNAUTHORIZED');
    expect((await admin(h, 'GET', '/datasets/shop-9')).body).toMatchObject({ active_version: 3, draft_version: 2 });
    expect((await admin(h, 'POST', '/keys', { dataset: 'nope' })).status).toBe(404);
    expect((await admin(h, 'POST', '/datasets', { id: 'x', color: 1 })).status).toBe(422);
  });

  it('portal draft: a foreign draft blocks publishing writes', async () => {
    const h = await harness({ records: [rec('a')] });
    const { body } = await admin(h, 'POST', '/datasets/shop-1/portal-draft', { upsert: [rec('p')] });
    expect(body.version).toBe(2);
    expect(code(await h.call('POST', '/records', { body: rec('b') }))).toBe('DRAFT_PENDING');
    expect(h.emulator.describe('shop-1').versions.find((v) => v.version === 2)?.author).toBe('portal');
  });

  it('clock, settings, faults, requests and counters over HTTP', async () => {
    const h = await harness({ records: [rec('a')] });
    await h.call('POST', '/records?publish=false', { body: rec('b') });
    const before = (await admin(h, 'GET', '/clock')).body.now;
    const adv = await admin(h, 'POST', '/clock/advance', { ms: 24 * 3600 * 1000 });
    expect(adv.body.now - before).toBe(24 * 3600 * 1000);
    expect(code(await h.call('POST', '/versions/2/publish', { body: {} }))).toBe('DRAFT_EXPIRED');

    expect((await admin(h, 'PATCH', '/settings', { job_duration_ms: 500, rate_limit_per_minute: 50 })).body).toEqual({
      job_duration_ms: 500,
      rate_limit_per_minute: 50,
      row_errors: 'job',
      legacy_jobs: 'publish',
    });
    const put = await h.call('PUT', '/records', { body: { records: [rec('a')] } });
    expect((await admin(h, 'GET', `/jobs/${put.body.job.job_id}`)).body.job.status).toBe('QUEUED');
    await admin(h, 'POST', '/clock/advance', { ms: 500 });
    expect((await admin(h, 'GET', `/jobs/${put.body.job.job_id}`)).body.job.status).toBe('PUBLISHED');

    expect((await admin(h, 'POST', '/faults', { method: 'GET', path: '/records$', status: 500, count: 1 })).status).toBe(201);
    expect((await admin(h, 'GET', '/faults')).body.faults).toHaveLength(1);
    expect(code(await h.call('GET', '/records'))).toBe('INTERNAL');
    await admin(h, 'POST', '/faults', { reset: true, count: 5 });
    expect((await admin(h, 'DELETE', '/faults')).status).toBe(204);
    expect((await h.call('GET', '/records')).status).toBe(200);

    const reqs = (await admin(h, 'GET', '/requests')).body.requests;
    expect(reqs.every((r: any) => r.path.startsWith('/api/'))).toBe(true);
    expect(reqs.map((r: any) => r.status)).toEqual([200, 410, 202, 500, 200]);
    expect((await admin(h, 'GET', '/counters')).body).toMatchObject({ jobsCreated: 1, recordWrites: 1 });
    await admin(h, 'DELETE', '/requests');
    expect(h.emulator.requests).toHaveLength(0);
    const state = (await admin(h, 'GET', '/state')).body;
    expect(state.datasets[0]).toMatchObject({ dataset_id: 'shop-1', active_version: 3 });
    expect((await admin(h, 'GET', '/nope')).status).toBe(404);
  });
});

describe('seed and start', () => {
  const running: RunningEmulator[] = [];
  const start = async (...args: Parameters<typeof startEmulator>) => {
    const r = await startEmulator(...args);
    running.push(r);
    return r;
  };

  it('loads a YAML seed file (datasets as a map) and serves it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'emu-seed-'));
    const file = join(dir, 'seed.yaml');
    await writeFile(
      file,
      [
        'job_duration_ms: 0',
        'rate_limit_per_minute: 60',
        'datasets:',
        '  shop-1:',
        '    name: Shop One',
        '    keys:',
        '      - { key: tbd_live_reader, roles: [read] }',
        '      - { key: tbd_live_old, legacy: true }',
        '    records:',
        '      - { record_id: A-1, display_name: Apple, api_value: apple }',
      ].join('\n'),
    );
    const seed = await loadEmulatorSeed(file);
    const r = await start({ seed });
    const res = await fetch(`${r.url}/api/v1/business-datasets/shop-1`, { headers: { authorization: 'Bearer tbd_live_reader' } });
    expect(await res.json()).toEqual({ dataset_id: 'shop-1', name: 'Shop One', record_count: 1, active_version: 1, draft_version: null });
    expect(r.emulator.settings.rateLimitPerMinute).toBe(60);
    expect(r.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    for (const x of running.splice(0)) await x.close();
  });

  it('a JSON seed file works too; a bad seed throws SEED_INVALID with the file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'emu-seed-'));
    const good = join(dir, 'seed.json');
    await writeFile(good, JSON.stringify({ datasets: [{ id: 'd', keys: [{ key: 'tbd_live_x' }] }] }));
    expect((await loadEmulatorSeed(good)).datasets[0]?.keys[0]?.roles).toEqual(['read', 'write', 'replace', 'publish']);
    const bad = join(dir, 'bad.yaml');
    await writeFile(bad, 'datasets:\n  - id: d\n    keys: [{ key: sk_nope }]\n');
    await expect(loadEmulatorSeed(bad)).rejects.toSatisfy((e: unknown) => hasCode(e, 'SEED_INVALID') && e.context.file === bad);
    await expect(loadEmulatorSeed(join(dir, 'missing.yaml'))).rejects.toSatisfy((e: unknown) => hasCode(e, 'SEED_UNREADABLE'));
  });

  it('emulatorSeedFromArgs builds the CLI seed and merges with a file seed', async () => {
    const seed = emulatorSeedFromArgs({ dataset: 'shop-1', key: 'tbd_live_cli', roles: 'read,write' });
    expect(seed.datasets).toEqual([{ id: 'shop-1', api_enabled: true, keys: [{ key: 'tbd_live_cli', roles: ['read', 'write'], legacy: false, revoked: false }], records: [] }]);
    expect(() => emulatorSeedFromArgs({ dataset: 'x', key: 'tbd_live_y', roles: 'read,admin' })).toThrow(/roles/);
    const merged = mergeEmulatorSeeds(seed, emulatorSeedFromArgs({ dataset: 'shop-1', key: 'tbd_live_two' }), {
      datasets: [{ id: 'shop-2', api_enabled: true, keys: [], records: [] }],
      job_duration_ms: 100,
    });
    expect(merged.datasets.map((d) => [d.id, d.keys.length])).toEqual([['shop-1', 2], ['shop-2', 0]]);
    expect(merged.job_duration_ms).toBe(100);
    const r = await start({ seed: merged, clock: createEmulatorClock() });
    const res = await fetch(`${r.url}/api/v1/business-datasets/shop-1/records`, { headers: { authorization: 'Bearer tbd_live_cli' } });
    expect(res.status).toBe(200);
    for (const x of running.splice(0)) await x.close();
  });

  it('close() ends open keep-alive connections', async () => {
    const r = await startEmulator();
    await fetch(`${r.url}/__emulator/state`);
    await r.close();
    await expect(fetch(`${r.url}/__emulator/state`)).rejects.toThrow();
  });
});
