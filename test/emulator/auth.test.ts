import { describe, expect, it } from 'vitest';
import { harness, rec, code, KEY } from './helpers.js';

describe('authentication and roles (A23, spec errors table)', () => {
  it('401 UNAUTHORIZED without a key, with a non-dataset key, an unknown key or a revoked key', async () => {
    const h = await harness();
    for (const key of [null, 'sk_live_whatever', 'tbd_live_unknown']) {
      const r = await h.call('GET', '/records', { key });
      expect(r.status).toBe(401);
      expect(code(r)).toBe('UNAUTHORIZED');
    }
    h.emulator.revokeKey(KEY);
    const r = await h.call('GET', '/records');
    expect([r.status, code(r)]).toEqual([401, 'UNAUTHORIZED']);
  });

  it('403 ACCOUNT_KEY_NOT_SUPPORTED for an account key', async () => {
    const h = await harness();
    const r = await h.call('GET', '/records', { key: 'tba_live_account' });
    expect([r.status, code(r)]).toEqual([403, 'ACCOUNT_KEY_NOT_SUPPORTED']);
    expect(r.body.error.message).toEqual(expect.any(String));
    expect(r.body.error.details).toEqual({});
  });

  it('404 DATASET_NOT_FOUND for a missing dataset or another dataset than the key’s', async () => {
    const h = await harness();
    h.emulator.addDataset({ id: 'shop-2' });
    const other = h.emulator.addKey({ dataset: 'shop-2' });
    expect(code(await h.call('GET', `${h.url}/api/v1/business-datasets/shop-2/records`))).toBe('DATASET_NOT_FOUND');
    expect(code(await h.call('GET', `${h.url}/api/v1/business-datasets/nope/records`))).toBe('DATASET_NOT_FOUND');
    expect((await h.call('GET', `${h.url}/api/v1/business-datasets/shop-2/records`, { key: other })).status).toBe(200);
  });

  it('403 API_DISABLED when the switch is off, for every request', async () => {
    const h = await harness();
    h.emulator.setApiEnabled('shop-1', false);
    for (const [m, p] of [['GET', ''], ['GET', '/records'], ['POST', '/records'], ['GET', '/versions']] as const) {
      const r = await h.call(m, p, m === 'POST' ? { body: rec('a') } : {});
      expect([r.status, code(r)]).toEqual([403, 'API_DISABLED']);
    }
    h.emulator.setApiEnabled('shop-1', true);
    expect((await h.call('GET', '/records')).status).toBe(200);
  });

  it('403 FORBIDDEN outside the key’s roles, PUBLISH_REQUIRED for publish and discard', async () => {
    const h = await harness({ roles: ['read'] });
    expect(code(await h.call('POST', '/records', { body: rec('a') }))).toBe('FORBIDDEN');
    expect(code(await h.call('PATCH', '/records/a', { body: { display_name: 'x' } }))).toBe('FORBIDDEN');
    expect(code(await h.call('DELETE', '/records/a'))).toBe('FORBIDDEN');
    expect(code(await h.call('PUT', '/records', { body: { records: [] } }))).toBe('FORBIDDEN');
    expect(code(await h.call('POST', '/imports', { raw: new FormData() }))).toBe('FORBIDDEN');
    const p = await h.call('POST', '/versions/1/publish', { body: {} });
    expect([p.status, code(p)]).toEqual([403, 'PUBLISH_REQUIRED']);
    expect(code(await h.call('DELETE', '/versions/1'))).toBe('PUBLISH_REQUIRED');
    const w = await harness({ roles: ['write'] });
    expect(code(await w.call('GET', '/records'))).toBe('FORBIDDEN');
  });

  it('unknown paths give 404 NOT_FOUND and wrong methods 405, in the A1 shape', async () => {
    const h = await harness();
    expect(code(await h.call('GET', '/nothing'))).toBe('NOT_FOUND');
    expect(code(await h.call('GET', `${h.url}/other`))).toBe('NOT_FOUND');
    const r = await h.call('POST', '/versions');
    expect([r.status, code(r)]).toEqual([405, 'METHOD_NOT_ALLOWED']);
  });

  it('A25: the dataset read', async () => {
    const h = await harness({ records: [rec('a'), rec('b')] });
    const r = await h.call('GET', '');
    expect(r.body).toEqual({ dataset_id: 'shop-1', name: 'Shop 1', record_count: 2, active_version: 1, draft_version: null });
    expect(r.headers.get('etag')).toBe('"v1"');
    await h.call('POST', '/records?publish=false', { body: rec('c') });
    expect((await h.call('GET', '')).body.draft_version).toBe(2);
  });

  it('the request log carries a key fingerprint, never the key', async () => {
    const h = await harness();
    await h.call('GET', '/records?limit=5', { headers: { 'idempotency-key': 'ignored-on-reads' } });
    const entry = h.emulator.requests.at(-1);
    expect(entry).toMatchObject({ method: 'GET', path: '/api/v1/business-datasets/shop-1/records', query: { limit: '5' }, status: 200 });
    expect(entry?.keyFingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(JSON.stringify(h.emulator.requests)).not.toContain(KEY);
  });
});
