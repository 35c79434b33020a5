import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiError } from '../../src/api/errors.js';
import { etagVersion } from '../../src/api/wire.js';
import { KEYS, rec, recs, rejectionOf, startWorld, type World } from './harness.js';

let w: World;
afterEach(async () => {
  await w.close();
});

describe('records over HTTP', () => {
  beforeEach(async () => {
    w = await startWorld({ records: recs(3) });
  });

  it('A25: reads the dataset with its ETag', async () => {
    const { value, etag } = await w.client().getDataset();
    expect(value).toMatchObject({ dataset_id: 'shop-1', record_count: 3, active_version: 1, draft_version: null });
    expect(etag).toBe('"v1"');
  });

  it('A9/A31: create, get, patch and delete publish a new version each, returning the ETag', async () => {
    const c = w.client();
    const created = await c.createRecord(rec('B-1'));
    expect(created.value).toMatchObject({ status: 'published', version: 2, staged: false, publish_denied: false });
    expect(created.etag).toBe('"v2"');
    const got = await c.getRecord('B-1');
    expect(got.value).toEqual(rec('B-1'));
    const patched = await c.patchRecord('B-1', { display_name: 'Renamed', aliases: ['x'] }, { ifMatch: created.etag! });
    expect(patched.value.record).toMatchObject({ display_name: 'Renamed', aliases: ['x'] });
    expect(etagVersion(patched.etag)).toBe(3);
    const deleted = await c.deleteRecord('B-1');
    expect(deleted.value).toMatchObject({ status: 'published', version: 4 });
    expect(w.emulator.records('shop-1').map((r) => r.record_id)).not.toContain('B-1');
  });

  it('A10: publish=false stages writes into one pending draft', async () => {
    const c = w.client();
    const a = await c.createRecord(rec('B-1'), { publish: false });
    const b = await c.patchRecord('A-00001', { active: false }, { publish: false });
    expect(a.value).toMatchObject({ status: 'draft', staged: true, publish_denied: false });
    expect(b.value.version).toBe(a.value.version);
    expect(w.emulator.requests.at(-1)?.query).toEqual({ publish: 'false' });
    const draftIds: string[] = [];
    for await (const r of c.listRecords({ source: 'draft' })) draftIds.push(r.record_id);
    expect(draftIds).toContain('B-1');
    expect((await c.getDataset()).value.draft_version).toBe(a.value.version);
  });

  it('sends no publish parameter unless publish is false (A34)', async () => {
    await w.client().createRecord(rec('B-2'), { publish: true });
    expect(w.emulator.requests.at(-1)?.query).toEqual({});
  });

  it('Rule 1: a key without the publish role stages, with staged and publish_denied', async () => {
    const { value } = await w.client(KEYS.noPublish).createRecord(rec('B-1'));
    expect(value).toMatchObject({ status: 'draft', staged: true, publish_denied: true });
    expect(w.emulator.describe('shop-1').active_version).toBe(1);
  });

  it('Rule 2 / A12: a legacy key publishes even when publish=false is asked', async () => {
    const { value } = await w.client(KEYS.legacy).createRecord(rec('B-1'), { publish: false });
    expect(value).toMatchObject({ status: 'published', staged: false });
    expect(w.emulator.describe('shop-1').active_version).toBe(2);
  });

  it('A2: If-Match with a stale ETag gives 412 with the current ETag, not retried', async () => {
    const c = w.client();
    w.emulator.portalPublish('shop-1', { upsert: [rec('P-1')] });
    const err = await rejectionOf(c.patchRecord('A-00001', { display_name: 'x' }, { ifMatch: '"v1"' }));
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 412, code: 'PRECONDITION_FAILED', currentEtag: '"v2"', action: 'retry', retryable: false, attempts: 1 });
    expect(w.seen('PATCH', '/records/A-00001')).toBe(1);
  });

  it('A9: PATCH of a missing record is 404 RECORD_NOT_FOUND; POST of an existing one is 422', async () => {
    const c = w.client();
    expect(await rejectionOf(c.patchRecord('NOPE', { active: false }))).toMatchObject({ status: 404, code: 'RECORD_NOT_FOUND' });
    const dup = await rejectionOf(c.createRecord(rec('A-00001')));
    expect(dup).toMatchObject({ status: 422, code: 'VALIDATION_FAILED', action: 'reject' });
  });
});

describe('paging (A7)', () => {
  it('iterates more than 1000 records across pages in record_id order, each page with its ETag', async () => {
    w = await startWorld({ records: recs(2345) });
    const c = w.client();
    const ids: string[] = [];
    for await (const r of c.listRecords()) ids.push(r.record_id);
    expect(ids).toHaveLength(2345);
    expect(ids).toEqual([...ids].sort());
    expect(new Set(ids).size).toBe(2345);
    expect(w.seen('GET', '/records')).toBe(3);

    const pages = [];
    for await (const p of c.listRecordPages({ limit: 500 })) pages.push(p);
    expect(pages.map((p) => p.records.length)).toEqual([500, 500, 500, 500, 345]);
    expect(pages.every((p) => p.etag === '"v1"')).toBe(true);
    expect(pages.at(-1)?.nextCursor).toBeNull();
  });

  it('shows a changed ETag when a publish happens between pages', async () => {
    w = await startWorld({ records: recs(30) });
    const c = w.client();
    const etags: (string | null)[] = [];
    for await (const p of c.listRecordPages({ limit: 10 })) {
      etags.push(p.etag);
      if (etags.length === 1) w.emulator.portalPublish('shop-1', { upsert: [rec('Z-1')] });
    }
    expect(etags).toEqual(['"v1"', '"v2"', '"v2"', '"v2"']);
  });
});
