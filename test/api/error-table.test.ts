import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DatasetClient } from '../../src/api/client.js';
import { ApiError } from '../../src/api/errors.js';
import { Secret } from '../../src/secret.js';
import { KEYS, rec, recs, rejectionOf, startWorld, type World } from './harness.js';

/**
 * Every row of the spec's error table, produced by the emulator's real logic
 * (no injected faults), as the client types it: status, code, action,
 * retryable, and sent exactly once unless the row is retried.
 */

let w: World;
beforeEach(async () => {
  w = await startWorld({ records: recs(4) });
});
afterEach(async () => {
  await w.close();
});

async function onlyOnce(method: string, suffix: string, p: Promise<unknown>): Promise<ApiError> {
  const err = await rejectionOf(p);
  expect(err).toBeInstanceOf(ApiError);
  expect(w.seen(method, suffix)).toBe(1);
  expect(err.attempts).toBe(1);
  return err as ApiError;
}

describe('error table', () => {
  it('401 UNAUTHORIZED: unknown key and revoked key → stop', async () => {
    const unknown = await onlyOnce('GET', '', w.client('tbd_live_never_issued').getDataset());
    expect(unknown).toMatchObject({ status: 401, code: 'UNAUTHORIZED', action: 'stop', retryable: false });
    w.emulator.revokeKey(KEYS.readOnly);
    const revoked = await rejectionOf(w.client(KEYS.readOnly).getDataset());
    expect(revoked).toMatchObject({ status: 401, code: 'UNAUTHORIZED', action: 'stop' });
  });

  it('403 API_DISABLED → stop', async () => {
    w.emulator.setApiEnabled('shop-1', false);
    const err = await onlyOnce('GET', '/records/x', w.client().getRecord('x'));
    expect(err).toMatchObject({ status: 403, code: 'API_DISABLED', action: 'stop' });
  });

  it('403 ACCOUNT_KEY_NOT_SUPPORTED → stop', async () => {
    const err = await onlyOnce('GET', '/versions', w.client('tba_live_account_key_123').listVersions());
    expect(err).toMatchObject({ status: 403, code: 'ACCOUNT_KEY_NOT_SUPPORTED', action: 'stop' });
  });

  it('403 FORBIDDEN: a write by a read-only key → stop', async () => {
    const err = await onlyOnce('POST', '/records', w.client(KEYS.readOnly).createRecord(rec('B-1')));
    expect(err).toMatchObject({ status: 403, code: 'FORBIDDEN', action: 'stop' });
  });

  it('403 PUBLISH_REQUIRED: publishing a draft without the publish role → hold', async () => {
    const c = w.client(KEYS.noPublish);
    const { value } = await c.createRecord(rec('B-1'));
    const err = await onlyOnce('POST', `/versions/${value.version}/publish`, c.publishVersion(value.version));
    expect(err).toMatchObject({ status: 403, code: 'PUBLISH_REQUIRED', action: 'hold' });
  });

  it("404 DATASET_NOT_FOUND: another dataset's key → stop", async () => {
    const err = await onlyOnce('GET', '', w.client(KEYS.other).getDataset());
    expect(err).toMatchObject({ status: 404, code: 'DATASET_NOT_FOUND', action: 'stop' });
    const missing = new DatasetClient({ baseUrl: w.url, datasetId: 'no-such', key: new Secret(KEYS.full), clock: w.clock });
    expect(await rejectionOf(missing.getDataset())).toMatchObject({ status: 404, code: 'DATASET_NOT_FOUND' });
    await missing.close();
  });

  it("409 CONFLICT: the draft's base version changed → retry (preview again)", async () => {
    const c = w.client();
    const { value } = await c.createRecord(rec('B-1'), { publish: false });
    // A person publishes in the portal: our draft's base is no longer the active version.
    w.emulator.portalPublish('shop-1', { upsert: [rec('P-1')] });
    const err = await onlyOnce('POST', `/versions/${value.version}/publish`, c.publishVersion(value.version));
    expect(err).toMatchObject({ status: 409, code: 'CONFLICT', action: 'retry', retryable: false });
  });

  it('409 DRAFT_PENDING: a publishing write while a draft is pending → hold', async () => {
    const c = w.client();
    w.emulator.portalDraft('shop-1', { upsert: [rec('P-1')] });
    const err = await onlyOnce('POST', '/records', c.createRecord(rec('B-1')));
    expect(err).toMatchObject({ status: 409, code: 'DRAFT_PENDING', action: 'hold' });
  });

  it('410 DRAFT_EXPIRED: publishing a draft older than 24 hours → retry (plan again)', async () => {
    const c = w.client();
    const { value } = await c.createRecord(rec('B-1'), { publish: false });
    w.clock.advance(24 * 60 * 60 * 1000 + 1);
    const err = await onlyOnce('POST', `/versions/${value.version}/publish`, c.publishVersion(value.version));
    expect(err).toMatchObject({ status: 410, code: 'DRAFT_EXPIRED', action: 'retry' });
  });

  it('412 PRECONDITION_FAILED carries current_etag (A2)', async () => {
    const err = await onlyOnce('DELETE', '/records/A-00001', w.client().deleteRecord('A-00001', { ifMatch: '"v0"' }));
    expect(err).toMatchObject({ status: 412, code: 'PRECONDITION_FAILED', currentEtag: '"v1"' });
  });

  it('422 VALIDATION_FAILED with row numbers (A3) → reject', async () => {
    w.emulator.configure({ rowErrors: 'sync' });
    const bad = [rec('A-1'), { ...rec('A-2'), display_name: '' }, rec('A-1')];
    const err = await onlyOnce('PUT', '/records', w.client().replaceRecords(bad, {}, { idempotencyKey: 'k-422' }));
    expect(err).toMatchObject({ status: 422, code: 'VALIDATION_FAILED', action: 'reject' });
    expect(err.rowErrors.map((r) => [r.row, r.field])).toEqual([
      [2, 'display_name'],
      [3, 'record_id'],
    ]);
  });

  it('422 MAPPING_REQUIRED: an upload whose header does not name the fields → reject', async () => {
    const csv = new TextEncoder().encode('SKU,Name,Code\nA,Apple,a\n');
    const p = w.client().importFile({ bytes: csv, filename: 'x.csv', contentType: 'text/csv' }, {}, { idempotencyKey: 'k-map' });
    const err = await onlyOnce('POST', '/imports', p);
    expect(err).toMatchObject({ status: 422, code: 'MAPPING_REQUIRED', action: 'reject' });
  });

  it('422 IDEMPOTENCY_KEY_REUSED: same key, different body → stop', async () => {
    const c = w.client();
    await c.replaceRecords(recs(4), {}, { idempotencyKey: 'k-same' });
    w.clock.advance(1);
    const err = await rejectionOf(c.replaceRecords(recs(5), {}, { idempotencyKey: 'k-same' }));
    expect(err).toMatchObject({ status: 422, code: 'IDEMPOTENCY_KEY_REUSED', action: 'stop', attempts: 1 });
    expect(w.seen('PUT', '/records')).toBe(2);
  });

  it('429 JOB_IN_PROGRESS is retried with backoff, and surfaces as retry when it outlasts the attempts', async () => {
    w.emulator.configure({ jobDurationMs: 10 * 60_000 });
    const c = w.client(KEYS.full, { retry: { maxThrottleAttempts: 3, maxRetryAfterMs: 1_000 } });
    await c.replaceRecords(recs(4), {}, { idempotencyKey: 'k-job-1' });
    const err = await rejectionOf(c.replaceRecords(recs(3), {}, { idempotencyKey: 'k-job-2' }));
    // Retry-After (600 s) exceeds what this client waits for: handed to the caller at once.
    expect(err).toMatchObject({ status: 429, code: 'JOB_IN_PROGRESS', action: 'retry', retryable: true });
    expect(err.retryAfterMs).toBe(600_000);
  });

  it('429 RATE_LIMITED is retried after Retry-After and surfaces as retry when attempts run out', async () => {
    w.emulator.configure({ rateLimitPerMinute: 2 });
    const c = w.client(KEYS.full, { retry: { maxThrottleAttempts: 2 } });
    await c.getDataset();
    await c.getDataset();
    const start = w.clock.now();
    const third = await c.getDataset(); // 429, waits Retry-After on the emulator clock, then succeeds
    expect(third.value.dataset_id).toBe('shop-1');
    expect(w.clock.now() - start).toBeGreaterThanOrEqual(1000);
    expect(w.seen('GET', '')).toBe(4); // the refused attempt counts too (A24)
    expect(c.stats).toMatchObject({ requests: 4, retries: 1, throttled: 1 });
    // Attempts exhausted: the caller gets RATE_LIMITED with action retry.
    w.emulator.faults.add({ method: 'GET', status: 429, code: 'RATE_LIMITED', retryAfterS: 1, count: 2 });
    const err = await rejectionOf(c.getDataset());
    expect(err).toMatchObject({ status: 429, code: 'RATE_LIMITED', action: 'retry', retryable: true, attempts: 2 });
  });
});
