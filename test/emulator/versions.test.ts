import { describe, expect, it } from 'vitest';
import { admin, harness, rec, recs, code } from './helpers.js';

const DAY = 24 * 60 * 60 * 1000;

describe('drafts and staging (A10–A12, Rules 1–2)', () => {
  it('publish=false stages into one draft that accumulates; records of the draft are listed with source=draft', async () => {
    const h = await harness({ records: [rec('a'), rec('b')] });
    const w1 = await h.call('POST', '/records?publish=false', { body: rec('c') });
    expect([w1.status, w1.body]).toEqual([200, { record: rec('c'), version: 2, status: 'draft', staged: true, publish_denied: false }]);
    expect(w1.headers.get('etag')).toBe('"v1"');
    const w2 = await h.call('DELETE', '/records/a?publish=false');
    expect(w2.body).toMatchObject({ version: 2, status: 'draft', staged: true });
    const w3 = await h.call('PATCH', '/records/c?publish=false', { body: { api_value: 'cc' } });
    expect(w3.body.record.api_value).toBe('cc');
    expect((await h.call('GET', '/records')).body.records.map((r: any) => r.record_id)).toEqual(['a', 'b']);
    const d = await h.call('GET', '/records?source=draft');
    expect(d.body.records.map((r: any) => r.record_id)).toEqual(['b', 'c']);
    expect(d.headers.get('etag')).toBe('"v1"');
    // Staged POST of a record that exists only in the draft is a duplicate; PATCH of one deleted in the draft is 404.
    expect(code(await h.call('POST', '/records?publish=false', { body: rec('c') }))).toBe('VALIDATION_FAILED');
    expect(code(await h.call('PATCH', '/records/a?publish=false', { body: { api_value: 'x' } }))).toBe('RECORD_NOT_FOUND');
  });

  it('source=draft without a pending draft is 404 VERSION_NOT_FOUND', async () => {
    const h = await harness();
    expect(code(await h.call('GET', '/records?source=draft'))).toBe('VERSION_NOT_FOUND');
  });

  it('Rule 1: a key without publish never publishes: staged, publish_denied', async () => {
    const h = await harness({ roles: ['read', 'write'], records: [rec('a')] });
    const r = await h.call('POST', '/records', { body: rec('b') });
    expect([r.status, r.body]).toEqual([200, { record: rec('b'), version: 2, status: 'draft', staged: true, publish_denied: true }]);
    expect(h.emulator.describe('shop-1').active_version).toBe(1);
  });

  it('Rule 2 / A12: a legacy key publishes at once, even with publish=false', async () => {
    const h = await harness({ legacy: true, roles: ['read'] });
    const r = await h.call('POST', '/records?publish=false', { body: rec('a') });
    expect([r.status, r.body.status, r.body.staged, r.body.publish_denied]).toEqual([201, 'published', false, false]);
    expect((await h.call('PUT', '/records', { body: { records: [rec('a')] } })).status).toBe(202);
  });

  it('A12 read broadly (default) or narrowly (legacy_jobs: stage): a legacy key\'s replace and upload jobs publish, or stage as asked', async () => {
    const fd = () => {
      const f = new FormData();
      f.append('file', new Blob(['record_id,display_name,api_value\nb,B,b\n']), 'x.csv');
      f.append('options', JSON.stringify({ publish: false }));
      return f;
    };
    for (const [mode, status, reason] of [['publish', 'PUBLISHED', null], ['stage', 'STAGED', 'PUBLISH_DISABLED']] as const) {
      const h = await harness({ legacy: true, records: [rec('a')] });
      expect((await admin(h, 'PATCH', '/settings', { legacy_jobs: mode })).body.legacy_jobs).toBe(mode);
      const put = await h.call('PUT', '/records', { body: { records: [rec('a'), rec('b')], options: { publish: false } } });
      expect(h.emulator.job(put.body.job.job_id)).toMatchObject({ status, reason, version: 2 });
      if (mode === 'stage') expect((await h.call('DELETE', '/versions/2')).status).toBe(204);
      const up = await h.call('POST', '/imports', { raw: fd() });
      const job = h.emulator.job(up.body.job.job_id);
      expect(job).toMatchObject({ status, reason });
      if (mode === 'stage') expect((await h.call('DELETE', `/versions/${job.version}`)).status).toBe(204);
      // Record writes of a legacy key publish either way.
      expect((await h.call('POST', '/records?publish=false', { body: rec('c') })).body.status).toBe('published');
    }
  });

  it('A11: while a draft is pending a publishing write, a replace and an upload give 409 DRAFT_PENDING; staged writes go on', async () => {
    const h = await harness({ records: [rec('a')] });
    await h.call('POST', '/records?publish=false', { body: rec('b') });
    const w = await h.call('POST', '/records', { body: rec('c') });
    expect([w.status, code(w)]).toEqual([409, 'DRAFT_PENDING']);
    expect(w.body.error.details.draft_version).toBe(2);
    expect(code(await h.call('PUT', '/records', { body: { records: [rec('a')] } }))).toBe('DRAFT_PENDING');
    const fd = new FormData();
    fd.append('file', new Blob(['record_id,display_name,api_value\na,A,a\n']), 'x.csv');
    expect(code(await h.call('POST', '/imports', { raw: fd }))).toBe('DRAFT_PENDING');
    expect((await h.call('POST', '/records?publish=false', { body: rec('d') })).status).toBe(200);
    const legacy = h.emulator.addKey({ dataset: 'shop-1', legacy: true });
    expect(code(await h.call('POST', '/records', { key: legacy, body: rec('e') }))).toBe('DRAFT_PENDING');
  });
});

describe('versions (A18–A22, A5)', () => {
  it('version 0 is the empty dataset; the first publish makes version 1; list newest first with counts', async () => {
    const h = await harness();
    let l = await h.call('GET', '/versions');
    expect(l.body).toEqual({
      active_version: 0,
      versions: [{ version: 0, status: 'active', base_version: null, created_at: expect.any(String), counts: { added: 0, changed: 0, deleted: 0 } }],
    });
    expect(l.headers.get('etag')).toBe('"v0"');
    await h.call('POST', '/records', { body: rec('a') });
    await h.call('PATCH', '/records/a', { body: { display_name: 'A' } });
    await h.call('POST', '/records?publish=false', { body: rec('b') });
    l = await h.call('GET', '/versions');
    expect(l.body.active_version).toBe(2);
    expect(l.body.versions.map((v: any) => [v.version, v.status, v.base_version, v.counts])).toEqual([
      [3, 'draft', 2, { added: 1, changed: 0, deleted: 0 }],
      [2, 'active', 1, { added: 0, changed: 1, deleted: 0 }],
      [1, 'superseded', 0, { added: 1, changed: 0, deleted: 0 }],
      [0, 'superseded', null, { added: 0, changed: 0, deleted: 0 }],
    ]);
    expect(l.headers.get('etag')).toBe('"v2"');
  });

  it('detail: counts and the first 20 changes in record_id order; 404 VERSION_NOT_FOUND', async () => {
    const h = await harness({ records: recs(30) });
    const next = [...recs(30).slice(5).map((r, i) => (i < 3 ? { ...r, api_value: 'changed' } : r)), rec('new-1'), rec('a-new')];
    await h.call('PUT', '/records', { body: { records: next, options: { publish: false } } });
    const job = h.emulator.jobs.list()[0]!;
    expect(h.emulator.job(job.id).status).toBe('STAGED');
    const d = await h.call('GET', '/versions/2');
    expect(d.body).toMatchObject({ version: 2, status: 'draft', base_version: 1, counts: { added: 2, changed: 3, deleted: 5 } });
    expect(d.body.sample).toHaveLength(10);
    expect(d.body.sample.map((s: any) => [s.op, s.record.record_id])).toEqual([
      ['add', 'a-new'],
      ['add', 'new-1'],
      ['delete', 'r0001'],
      ['delete', 'r0002'],
      ['delete', 'r0003'],
      ['delete', 'r0004'],
      ['delete', 'r0005'],
      ['change', 'r0006'],
      ['change', 'r0007'],
      ['change', 'r0008'],
    ]);
    const big = await harness();
    await big.call('PUT', '/records', { body: { records: recs(45) } });
    big.emulator.tick();
    const b = await big.call('GET', '/versions/1');
    expect(b.body.counts.added).toBe(45);
    expect(b.body.sample.map((s: any) => s.record.record_id)).toEqual(recs(20).map((r) => r.record_id));
    expect(code(await h.call('GET', '/versions/99'))).toBe('VERSION_NOT_FOUND');
    expect(code(await h.call('GET', '/versions/abc'))).toBe('VERSION_NOT_FOUND');
  });

  it('draft → published: 200 {version, status: active}; the old active is superseded', async () => {
    const h = await harness({ records: [rec('a')] });
    await h.call('POST', '/records?publish=false', { body: rec('b') });
    const p = await h.call('POST', '/versions/2/publish', { body: {} });
    expect([p.status, p.body]).toEqual([200, { version: 2, status: 'active' }]);
    expect(p.headers.get('etag')).toBe('"v2"');
    expect(h.emulator.records('shop-1').map((r) => r.record_id)).toEqual(['a', 'b']);
    // An empty body is accepted as {}.
    await h.call('POST', '/records?publish=false', { body: rec('c') });
    expect((await h.call('POST', '/versions/3/publish')).status).toBe(200);
    expect(code(await h.call('POST', '/versions/4/publish', { body: { force: true } }))).toBe('VALIDATION_FAILED');
    expect(code(await h.call('POST', '/versions/4/publish', { body: { options: { publish: true } } }))).toBe('VALIDATION_FAILED');
  });

  it('draft stays draft with 409 CONFLICT when another publish happened since its base', async () => {
    const h = await harness({ records: [rec('a')] });
    await h.call('POST', '/records?publish=false', { body: rec('b') });
    const foreign = h.emulator.portalPublish('shop-1', { upsert: [rec('z')] });
    expect(foreign).toBe(3);
    const p = await h.call('POST', '/versions/2/publish', { body: {} });
    expect([p.status, code(p)]).toEqual([409, 'CONFLICT']);
    expect(p.body.error.details).toMatchObject({ base_version: 1, active_version: 3 });
    expect(h.emulator.describe('shop-1').draft_version).toBe(2);
    // Publishing an already active or superseded version is a conflict too.
    expect(code(await h.call('POST', '/versions/3/publish', { body: {} }))).toBe('CONFLICT');
    expect(code(await h.call('POST', '/versions/1/publish', { body: {} }))).toBe('CONFLICT');
    expect(code(await h.call('POST', '/versions/77/publish', { body: {} }))).toBe('VERSION_NOT_FOUND');
  });

  it('draft → expired after 24 hours of emulator time: 410 DRAFT_EXPIRED, and no longer pending', async () => {
    const h = await harness({ records: [rec('a')] });
    await h.call('POST', '/records?publish=false', { body: rec('b') });
    h.emulator.clock.advance(DAY - 1);
    expect((await h.call('GET', '')).body.draft_version).toBe(2);
    h.emulator.clock.advance(1);
    expect((await h.call('GET', '')).body.draft_version).toBeNull();
    const p = await h.call('POST', '/versions/2/publish', { body: {} });
    expect([p.status, code(p)]).toEqual([410, 'DRAFT_EXPIRED']);
    expect(code(await h.call('DELETE', '/versions/2'))).toBe('DRAFT_EXPIRED');
    expect((await h.call('GET', '/versions/2')).body.status).toBe('expired');
    // A publishing write is allowed again.
    expect((await h.call('POST', '/records', { body: rec('c') })).status).toBe(201);
  });

  it('draft → discarded: DELETE 204, then publish is 404; discarding again is 204; a published version cannot be discarded', async () => {
    const h = await harness({ records: [rec('a')] });
    await h.call('POST', '/records?publish=false', { body: rec('b') });
    const d = await h.call('DELETE', '/versions/2');
    expect([d.status, d.body]).toEqual([204, null]);
    expect((await h.call('GET', '/versions/2')).body.status).toBe('discarded');
    expect(code(await h.call('POST', '/versions/2/publish', { body: {} }))).toBe('VERSION_NOT_FOUND');
    expect((await h.call('DELETE', '/versions/2')).status).toBe(204);
    expect(code(await h.call('DELETE', '/versions/1'))).toBe('CONFLICT');
    expect(code(await h.call('DELETE', '/versions/50'))).toBe('VERSION_NOT_FOUND');
    expect((await h.call('POST', '/records', { body: rec('c') })).status).toBe(201);
  });

  it('A5 on publish: 422 MASS_DELETE_GUARD / EMPTY_RESULT_GUARD, draft stays pending; options let it through', async () => {
    const h = await harness({ records: recs(4) });
    for (const id of ['r0001', 'r0002', 'r0003']) await h.call('DELETE', `/records/${id}?publish=false`);
    const m = await h.call('POST', '/versions/2/publish', { body: {} });
    expect([m.status, code(m)]).toEqual([422, 'MASS_DELETE_GUARD']);
    expect(h.emulator.describe('shop-1').draft_version).toBe(2);
    expect((await h.call('POST', '/versions/2/publish', { body: { options: { allow_mass_delete: true } } })).status).toBe(200);

    const e = await harness({ records: recs(2) });
    await e.call('DELETE', '/records/r0001?publish=false');
    // Exactly half deleted is not "more than half".
    expect((await e.call('POST', '/versions/2/publish', { body: {} })).status).toBe(200);
    await e.call('DELETE', '/records/r0002?publish=false');
    const z = await e.call('POST', '/versions/3/publish', { body: { options: { allow_mass_delete: true } } });
    expect([z.status, code(z)]).toEqual([422, 'EMPTY_RESULT_GUARD']);
    expect((await e.call('POST', '/versions/3/publish', { body: { options: { allow_empty: true } } })).status).toBe(200);
    expect(e.emulator.records('shop-1')).toEqual([]);
  });
});
