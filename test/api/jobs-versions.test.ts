import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KEYS, rec, recs, rejectionOf, startWorld, type World } from './harness.js';

let w: World;
beforeEach(async () => {
  w = await startWorld({ records: recs(10) });
});
afterEach(async () => {
  await w.close();
});

describe('replace, upload and jobs (A13–A17)', () => {
  it('replace answers 202 with a job; waitForJob polls until PUBLISHED', async () => {
    w.emulator.configure({ jobDurationMs: 5_000 });
    const c = w.client();
    const { value: job, etag } = await c.replaceRecords([...recs(9), rec('N-1')], {}, { idempotencyKey: 'r-1', ifMatch: '"v1"' });
    expect(job.status).toBe('QUEUED');
    expect(etag).toBe('"v1"');
    const done = await c.waitForJob(job.job_id, { pollMs: 1_000 });
    expect(done).toMatchObject({ status: 'PUBLISHED', counts: { added: 1, changed: 0, deleted: 1 }, reason: null });
    expect(w.emulator.describe('shop-1').active_version).toBe(done.version);
    expect(w.seen('GET', `/sync-jobs/${job.job_id}`)).toBeGreaterThan(1);
  });

  it('A16: the same Idempotency-Key and body replays the same job, marked replayed', async () => {
    const c = w.client();
    const first = await c.replaceRecords(recs(10), { publish: false }, { idempotencyKey: 'same' });
    const second = await c.replaceRecords(recs(10), { publish: false }, { idempotencyKey: 'same' });
    expect(second.value.job_id).toBe(first.value.job_id);
    expect(first.replayed).toBe(false);
    expect(second.replayed).toBe(true);
    expect(w.emulator.counters.jobsCreated).toBe(1);
  });

  it('a job whose records fail validation ends FAILED with row errors (A15)', async () => {
    const c = w.client();
    const { value } = await c.replaceRecords([rec('A-1'), { ...rec('A-2'), api_value: '' }], {}, { idempotencyKey: 'bad' });
    const done = await c.waitForJob(value.job_id);
    expect(done.status).toBe('FAILED');
    expect(done.errors[0]).toMatchObject({ row: 2, field: 'api_value' });
  });

  it('uploads a CSV from bytes with mapping, encoding and options', async () => {
    const c = w.client();
    const csv = 'SKU,Name,Code,Stock\n' + recs(10).map((r, i) => `${r.record_id},${r.display_name},${r.api_value},${i}`).join('\n') + '\n';
    const { value } = await c.importFile(
      { bytes: new TextEncoder().encode(csv), filename: 'items.csv', contentType: 'text/csv' },
      { mapping: { record_id: 'SKU', display_name: 'Name', api_value: 'Code', 'attributes.stock': 'Stock' }, encoding: 'utf-8', options: { publish: false } },
      { idempotencyKey: 'u-1' },
    );
    const done = await c.waitForJob(value.job_id);
    expect(done).toMatchObject({ status: 'STAGED', reason: 'PUBLISH_DISABLED', counts: { changed: 10 } });
    const draft = await c.getVersion(done.version!);
    expect(draft.value.sample[0]?.record.attributes).toEqual({ stock: '0' });
  });

  it('uploads a file from a path; a repeat with the same key replays the same job', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'api-upload-'));
    const path = join(dir, 'items.csv');
    await writeFile(path, 'record_id,display_name,api_value\nA-00001,One,one\n' + recs(10).slice(1).map((r) => `${r.record_id},${r.display_name},${r.api_value}`).join('\n'));
    const c = w.client();
    const file = { path, filename: 'items.csv', contentType: 'text/csv' };
    const first = await c.importFile(file, { options: { publish: true } }, { idempotencyKey: 'u-2' });
    const again = await c.importFile(file, { options: { publish: true } }, { idempotencyKey: 'u-2' });
    expect(again.value.job_id).toBe(first.value.job_id);
    expect((await c.waitForJob(first.value.job_id)).status).toBe('PUBLISHED');
    expect((await c.getRecord('A-00001')).value.display_name).toBe('One');
  });

  it('Rule 3: a replace while a job runs meets 429 JOB_IN_PROGRESS, is retried, and goes through when the job ends', async () => {
    w.emulator.configure({ jobDurationMs: 3_000 });
    const c = w.client();
    const a = await c.replaceRecords(recs(10), {}, { idempotencyKey: 'j-1' });
    const b = await c.replaceRecords(recs(11), {}, { idempotencyKey: 'j-2' });
    expect(b.value.job_id).not.toBe(a.value.job_id);
    expect(w.seen('PUT', '/records')).toBe(3);
    expect(w.emulator.requests.find((r) => r.status === 429)?.errorCode).toBe('JOB_IN_PROGRESS');
    expect(c.stats.retries).toBe(1);
  });

  it('Rule 4 / A5: mass delete and empty result are held as STAGED unless the option is set', async () => {
    const c = w.client();
    const mass = await c.waitForJob((await c.replaceRecords(recs(4), {}, { idempotencyKey: 'm-1' })).value.job_id);
    expect(mass).toMatchObject({ status: 'STAGED', reason: 'MASS_DELETE_GUARD' });
    // The held draft stays pending; publishing it is refused (A5) until the flag is given.
    const refused = await rejectionOf(c.publishVersion(mass.version!));
    expect(refused).toMatchObject({ status: 422, code: 'MASS_DELETE_GUARD', action: 'hold' });
    const ok = await c.publishVersion(mass.version!, { allow_mass_delete: true });
    expect(ok.value).toEqual({ version: mass.version, status: 'active' });
    expect(ok.etag).toBe(`"v${mass.version}"`);

    const empty = await c.waitForJob((await c.replaceRecords([], {}, { idempotencyKey: 'e-1' })).value.job_id);
    expect(empty).toMatchObject({ status: 'STAGED', reason: 'EMPTY_RESULT_GUARD' });
    expect(await rejectionOf(c.publishVersion(empty.version!))).toMatchObject({ code: 'EMPTY_RESULT_GUARD' });
    await c.discardVersion(empty.version!);
    const allowed = await c.waitForJob((await c.replaceRecords([], { allow_empty: true }, { idempotencyKey: 'e-2' })).value.job_id);
    expect(allowed.status).toBe('PUBLISHED');
    expect((await c.getDataset()).value.record_count).toBe(0);
  });

  it('Rule 1 on jobs: a key without publish stages the replace (STAGED, PUBLISH_DENIED)', async () => {
    const c = w.client(KEYS.noPublish);
    const done = await c.waitForJob((await c.replaceRecords(recs(10), {}, { idempotencyKey: 'np' })).value.job_id);
    expect(done).toMatchObject({ status: 'STAGED', reason: 'PUBLISH_DENIED' });
  });

  it('waitForJob stops with ABORTED when its signal fires, and with TIMEOUT after timeoutMs', async () => {
    w.emulator.configure({ jobDurationMs: 60 * 60_000 });
    const ac = new AbortController();
    const c = w.client(KEYS.full, { onRequest: (e) => e.path.startsWith('/sync-jobs') && ac.abort() });
    const { value } = await c.replaceRecords(recs(10), {}, { idempotencyKey: 'slow' });
    expect(await rejectionOf(c.waitForJob(value.job_id, { signal: ac.signal }))).toMatchObject({ code: 'ABORTED' });
    expect(await rejectionOf(w.client().waitForJob(value.job_id, { timeoutMs: 30_000 }))).toMatchObject({ code: 'TIMEOUT' });
  });
});

describe('version transitions (spec table, A18–A22)', () => {
  it('(none) → draft by publish=false; draft → published; listed newest first', async () => {
    const c = w.client();
    const { value } = await c.deleteRecord('A-00001', { publish: false });
    const list = await c.listVersions();
    expect(list.value.active_version).toBe(1);
    expect(list.value.versions[0]).toMatchObject({ version: value.version, status: 'draft', base_version: 1 });
    expect(list.etag).toBe('"v1"');
    const detail = await c.getVersion(value.version);
    expect(detail.value).toMatchObject({ status: 'draft', counts: { added: 0, changed: 0, deleted: 1 } });
    expect(detail.value.sample).toEqual([{ op: 'delete', record: rec('A-00001') }]);
    await c.publishVersion(value.version, {}, { idempotencyKey: 'pub-1' });
    const after = await c.listVersions();
    expect(after.value.active_version).toBe(value.version);
    expect(after.value.versions.map((v) => v.status)).toEqual(['active', 'superseded', 'superseded']);
  });

  it('(none) → draft by a key without publish; a publish-role key publishes it', async () => {
    const { value } = await w.client(KEYS.noPublish).patchRecord('A-00002', { active: false });
    expect(value.status).toBe('draft');
    await w.client().publishVersion(value.version);
    expect((await w.client().getRecord('A-00002')).value.active).toBe(false);
  });

  it('draft stays draft on 409 CONFLICT when another publish came first', async () => {
    const c = w.client();
    const { value } = await c.createRecord(rec('B-1'), { publish: false });
    w.emulator.portalPublish('shop-1', { upsert: [rec('P-1')] });
    expect(await rejectionOf(c.publishVersion(value.version))).toMatchObject({ status: 409, code: 'CONFLICT' });
    expect((await c.getVersion(value.version)).value.status).toBe('draft');
  });

  it('draft → discarded (A21: 204); publishing it afterwards is 404 VERSION_NOT_FOUND', async () => {
    const c = w.client();
    const { value } = await c.createRecord(rec('B-1'), { publish: false });
    const discarded = await c.discardVersion(value.version);
    expect(discarded).toMatchObject({ value: null, etag: '"v1"' });
    expect((await c.getVersion(value.version)).value.status).toBe('discarded');
    expect(await rejectionOf(c.publishVersion(value.version))).toMatchObject({ status: 404, code: 'VERSION_NOT_FOUND', action: 'hold' });
  });

  it('draft → expired after 24 hours (410 DRAFT_EXPIRED), listed as expired', async () => {
    const c = w.client();
    const { value } = await c.createRecord(rec('B-1'), { publish: false });
    w.clock.advance(24 * 60 * 60 * 1000);
    expect(await rejectionOf(c.publishVersion(value.version))).toMatchObject({ status: 410, code: 'DRAFT_EXPIRED' });
    expect((await c.listVersions()).value.versions[0]).toMatchObject({ version: value.version, status: 'expired' });
    expect((await c.getDataset()).value.draft_version).toBeNull();
  });
});
