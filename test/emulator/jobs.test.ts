import { describe, expect, it } from 'vitest';
import { harness, rec, recs, code } from './helpers.js';

describe('replace and jobs (A13, A15, A17, A32, Rules 3–4)', () => {
  it('202 {job} QUEUED → RUNNING → PUBLISHED on the emulator clock', async () => {
    const h = await harness({ records: recs(3) });
    h.emulator.configure({ jobDurationMs: 4000 });
    const r = await h.call('PUT', '/records', { body: { records: [...recs(3), rec('x')] } });
    expect(r.status).toBe(202);
    const job = r.body.job;
    expect(job).toEqual({
      job_id: expect.any(String),
      status: 'QUEUED',
      version: null,
      counts: { added: 0, changed: 0, deleted: 0 },
      errors: [],
      reason: null,
      created_at: '2025-01-01T00:00:00.000Z',
      updated_at: '2025-01-01T00:00:00.000Z',
    });
    h.emulator.clock.advance(1000);
    const running = await h.call('GET', `/sync-jobs/${job.job_id}`);
    expect(running.body.job.status).toBe('RUNNING');
    h.emulator.clock.advance(3000);
    const done = await h.call('GET', `/sync-jobs/${job.job_id}`);
    expect(done.body.job).toMatchObject({ status: 'PUBLISHED', version: 2, counts: { added: 1, changed: 0, deleted: 0 }, reason: null });
    expect(done.headers.get('etag')).toBe('"v2"');
    expect(code(await h.call('GET', '/sync-jobs/job_nope'))).toBe('JOB_NOT_FOUND');
  });

  it('duration 0: the job completes on the next request', async () => {
    const h = await harness();
    const r = await h.call('PUT', '/records', { body: { records: recs(2), options: { publish: true } } });
    expect(r.body.job.status).toBe('QUEUED');
    const j = await h.call('GET', `/sync-jobs/${r.body.job.job_id}`);
    expect(j.body.job).toMatchObject({ status: 'PUBLISHED', version: 1, counts: { added: 2, changed: 0, deleted: 0 } });
  });

  it('Rule 3: 429 JOB_IN_PROGRESS for replace, upload and publish while a job runs', async () => {
    const h = await harness({ records: [rec('a')] });
    h.emulator.configure({ jobDurationMs: 10_000 });
    await h.call('PUT', '/records', { body: { records: [rec('a'), rec('b')] } });
    const again = await h.call('PUT', '/records', { body: { records: [rec('a')] } });
    expect([again.status, code(again)]).toEqual([429, 'JOB_IN_PROGRESS']);
    expect(Number(again.headers.get('retry-after'))).toBe(10);
    const fd = new FormData();
    fd.append('file', new Blob(['record_id,display_name,api_value\na,A,a\n']), 'x.csv');
    expect(code(await h.call('POST', '/imports', { raw: fd }))).toBe('JOB_IN_PROGRESS');
    expect(code(await h.call('POST', '/versions/1/publish', { body: {} }))).toBe('JOB_IN_PROGRESS');
    // Record writes are not jobs.
    expect((await h.call('GET', '/records')).status).toBe(200);
    h.emulator.clock.advance(10_000);
    expect((await h.call('PUT', '/records', { body: { records: [rec('a')] } })).status).toBe(202);
  });

  it('publish=false keeps the result as a draft: STAGED with the draft version', async () => {
    const h = await harness({ records: [rec('a')] });
    const r = await h.call('PUT', '/records', { body: { records: [rec('a'), rec('b')], options: { publish: false } } });
    const j = h.emulator.job(r.body.job.job_id);
    expect(j).toMatchObject({ status: 'STAGED', version: 2, reason: 'PUBLISH_DISABLED', counts: { added: 1 } });
    expect((await h.call('GET', '')).body).toMatchObject({ active_version: 1, draft_version: 2 });
    expect((await h.call('GET', '/records?source=draft')).body.records).toHaveLength(2);
  });

  it('Rule 1 for replace: a key without publish stages (reason PUBLISH_DENIED)', async () => {
    const h = await harness({ roles: ['read', 'replace'], records: [rec('a')] });
    const r = await h.call('PUT', '/records', { body: { records: [rec('b')] } });
    expect(h.emulator.job(r.body.job.job_id)).toMatchObject({ status: 'STAGED', version: 2, reason: 'PUBLISH_DENIED' });
  });

  it('Rule 4 / A5 on a job: STAGED with MASS_DELETE_GUARD or EMPTY_RESULT_GUARD, draft pending; options allow it', async () => {
    const h = await harness({ records: recs(10) });
    let r = await h.call('PUT', '/records', { body: { records: recs(4) } });
    expect(h.emulator.job(r.body.job.job_id)).toMatchObject({ status: 'STAGED', reason: 'MASS_DELETE_GUARD', version: 2, counts: { deleted: 6 } });
    expect(h.emulator.describe('shop-1')).toMatchObject({ active_version: 1, draft_version: 2 });
    const p = await h.call('POST', '/versions/2/publish', { body: {} });
    expect(code(p)).toBe('MASS_DELETE_GUARD');
    await h.call('DELETE', '/versions/2');
    r = await h.call('PUT', '/records', { body: { records: [] } });
    expect(h.emulator.job(r.body.job.job_id)).toMatchObject({ status: 'STAGED', reason: 'EMPTY_RESULT_GUARD' });
    await h.call('DELETE', '/versions/3');
    r = await h.call('PUT', '/records', { body: { records: recs(4), options: { allow_mass_delete: true } } });
    expect(h.emulator.job(r.body.job.job_id)).toMatchObject({ status: 'PUBLISHED', version: 4 });
    r = await h.call('PUT', '/records', { body: { records: [], options: { allow_empty: true } } });
    expect(h.emulator.job(r.body.job.job_id)).toMatchObject({ status: 'PUBLISHED', version: 5, counts: { deleted: 4 } });
    // From an empty active version nothing is guarded.
    r = await h.call('PUT', '/records', { body: { records: [] } });
    expect(h.emulator.job(r.body.job.job_id)).toMatchObject({ status: 'PUBLISHED' });
  });

  it('records that fail validation end the job FAILED with A3 row errors (or a 422 in sync mode)', async () => {
    const h = await harness({ records: [rec('a')] });
    const body = { records: [rec('a'), { ...rec('b'), display_name: '' }, rec('a'), { ...rec('c'), extra: 1 }] };
    const r = await h.call('PUT', '/records', { body });
    expect(r.status).toBe(202);
    const j = h.emulator.job(r.body.job.job_id);
    expect(j.status).toBe('FAILED');
    expect(j.reason).toBe('VALIDATION_FAILED');
    expect(j.version).toBeNull();
    expect(j.errors.map((e) => [e.row, e.record_id, e.field])).toEqual([
      [2, 'b', 'display_name'],
      [3, 'a', 'record_id'],
      [4, 'c', '(record)'],
    ]);
    expect(h.emulator.describe('shop-1')).toMatchObject({ active_version: 1, draft_version: null });
    h.emulator.configure({ rowErrors: 'sync' });
    const s = await h.call('PUT', '/records', { body });
    expect([s.status, code(s)]).toEqual([422, 'VALIDATION_FAILED']);
    expect(s.body.error.details.errors).toHaveLength(3);
  });

  it('A13/A34: a malformed replace body or unknown options key is 422 at once', async () => {
    const h = await harness();
    for (const body of [{}, { records: 'x' }, { records: [], extra: 1 }, { records: [], options: { force: true } }, { records: [], options: { publish: 'no' } }]) {
      const r = await h.call('PUT', '/records', { body });
      expect([r.status, code(r)], JSON.stringify(body)).toEqual([422, 'VALIDATION_FAILED']);
    }
    expect(h.emulator.counters.jobsCreated).toBe(0);
  });

  it('a job meets a draft that appeared while it ran: FAILED with reason DRAFT_PENDING', async () => {
    const h = await harness({ records: [rec('a')] });
    h.emulator.configure({ jobDurationMs: 1000 });
    const r = await h.call('PUT', '/records', { body: { records: [rec('a'), rec('b')] } });
    await h.call('POST', '/records?publish=false', { body: rec('c') });
    h.emulator.clock.advance(1000);
    expect(h.emulator.job(r.body.job.job_id)).toMatchObject({ status: 'FAILED', reason: 'DRAFT_PENDING' });
  });
});

describe('Idempotency-Key (A16, A35)', () => {
  it('same key and same canonical body: same job, Idempotent-Replayed; different body: 422 IDEMPOTENCY_KEY_REUSED', async () => {
    const h = await harness({ records: [rec('a')] });
    h.emulator.configure({ jobDurationMs: 5000 });
    const headers = { 'idempotency-key': 'k-1' };
    const first = await h.call('PUT', '/records', { body: { records: [rec('a'), rec('b')], options: { publish: true } }, headers });
    // Same content with keys in another order is the same body after canonicalisation.
    const reordered = { options: { publish: true }, records: [Object.fromEntries(Object.entries(rec('a')).reverse()), rec('b')] };
    const second = await h.call('PUT', '/records', { raw: JSON.stringify(reordered), headers: { ...headers, 'content-type': 'application/json' } });
    expect(second.status).toBe(202);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(second.body.job.job_id).toBe(first.body.job.job_id);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const other = await h.call('PUT', '/records', { body: { records: [rec('a')] }, headers });
    expect([other.status, code(other)]).toEqual([422, 'IDEMPOTENCY_KEY_REUSED']);
    expect(h.emulator.counters.jobsCreated).toBe(1);
    // The replay shows the job as it is now, and it comes before JOB_IN_PROGRESS and If-Match.
    h.emulator.clock.advance(5000);
    const later = await h.call('PUT', '/records', { body: reordered, headers: { ...headers, 'if-match': '"v1"' } });
    expect(later.body.job.status).toBe('PUBLISHED');
    expect(later.headers.get('etag')).toBe('"v2"');
    const log = h.emulator.requests.filter((r) => r.idempotencyKey === 'k-1');
    expect(log.map((r) => r.replayed)).toEqual([false, true, false, true]);
  });

  it('on record writes, publish and discard; kept 24 hours of emulator time', async () => {
    const h = await harness({ records: [rec('a')] });
    const w1 = await h.call('POST', '/records?publish=false', { body: rec('b'), headers: { 'idempotency-key': 'w' } });
    const w2 = await h.call('POST', '/records?publish=false', { body: rec('b'), headers: { 'idempotency-key': 'w' } });
    expect([w2.status, w2.body]).toEqual([w1.status, w1.body]);
    expect(h.emulator.counters.recordWrites).toBe(1);
    // Another query is another request.
    expect(code(await h.call('POST', '/records', { body: rec('b'), headers: { 'idempotency-key': 'w' } }))).toBe('IDEMPOTENCY_KEY_REUSED');
    const p1 = await h.call('POST', '/versions/2/publish', { body: {}, headers: { 'idempotency-key': 'p' } });
    const p2 = await h.call('POST', '/versions/2/publish', { body: {}, headers: { 'idempotency-key': 'p' } });
    expect([p1.status, p2.status, p2.headers.get('idempotent-replayed')]).toEqual([200, 200, 'true']);
    expect(h.emulator.counters.publishes).toBe(1);
    h.emulator.clock.advance(24 * 60 * 60 * 1000);
    const p3 = await h.call('POST', '/versions/2/publish', { body: {}, headers: { 'idempotency-key': 'p' } });
    expect(code(p3)).toBe('CONFLICT');
  });

  it('refusals are not remembered: a retry after the cause is gone succeeds', async () => {
    const h = await harness({ records: [rec('a')] });
    await h.call('POST', '/records?publish=false', { body: rec('x') });
    const headers = { 'idempotency-key': 'r' };
    expect(code(await h.call('PUT', '/records', { body: { records: [rec('a')] }, headers }))).toBe('DRAFT_PENDING');
    await h.call('DELETE', '/versions/2');
    expect((await h.call('PUT', '/records', { body: { records: [rec('a')] }, headers })).status).toBe(202);
  });
});
