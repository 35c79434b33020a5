import { createServer } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DatasetClient } from '../../src/api/client.js';
import { Secret } from '../../src/secret.js';
import { KEYS, rec, recs, rejectionOf, startWorld, type World } from './harness.js';

/**
 * Retries under injected faults. The emulator's request log is the witness:
 * a request that is not safe to repeat must appear in it once.
 */

let w: World;
beforeEach(async () => {
  w = await startWorld({ records: recs(5) });
});
afterEach(async () => {
  await w.close();
});

describe('safe requests are retried', () => {
  it('GET through two 503s', async () => {
    w.emulator.faults.add({ method: 'GET', path: /\/records\/A-00001$/, status: 503, count: 2 });
    const c = w.client();
    const { value } = await c.getRecord('A-00001');
    expect(value.record_id).toBe('A-00001');
    expect(w.seen('GET', '/records/A-00001')).toBe(3);
    expect(c.stats).toMatchObject({ requests: 3, retries: 2 });
  });

  it('GET through a connection reset', async () => {
    w.emulator.faults.add({ method: 'GET', reset: true });
    expect((await w.client().getDataset()).value.record_count).toBe(5);
    expect(w.seen('GET', '')).toBe(2);
  });

  it('PATCH and DELETE through a 500 and a reset', async () => {
    const c = w.client();
    w.emulator.faults.add({ method: 'PATCH', status: 500 });
    await c.patchRecord('A-00001', { display_name: 'New' });
    w.emulator.faults.add({ method: 'DELETE', reset: true });
    await c.deleteRecord('A-00002');
    expect(w.seen('PATCH', '/records/A-00001')).toBe(2);
    expect(w.seen('DELETE', '/records/A-00002')).toBe(2);
    expect(w.emulator.records('shop-1').map((r) => r.record_id)).toEqual(['A-00001', 'A-00003', 'A-00004', 'A-00005']);
  });

  it('PATCH and DELETE whose answers were lost after apply replay their first answer (own Idempotency-Key), not 412/404', async () => {
    const c = w.client();
    w.emulator.faults.add({ method: 'PATCH', applyThenDrop: true });
    const patched = await c.patchRecord('A-00001', { display_name: 'New' }, { ifMatch: '"v1"' });
    expect(patched).toMatchObject({ replayed: true, value: { version: 2, status: 'published' } });
    w.emulator.faults.add({ method: 'DELETE', applyThenDrop: true });
    const deleted = await c.deleteRecord('A-00003');
    expect(deleted).toMatchObject({ replayed: true, value: { version: 3 } });
    expect(w.emulator.counters.recordWrites).toBe(2);
    const keys = w.emulator.requests.filter((r) => r.method !== 'GET').map((r) => r.idempotencyKey);
    expect(keys[0]).toBe(keys[1]);
    expect(keys[2]).toBe(keys[3]);
    expect(keys[0]).not.toBe(keys[2]);
  });

  it('PUT /records whose answer was lost after apply is re-sent with the same Idempotency-Key: one job', async () => {
    w.emulator.faults.add({ method: 'PUT', path: /\/records$/, applyThenDrop: true });
    const c = w.client();
    const { value, replayed } = await c.replaceRecords(recs(6), {}, { idempotencyKey: 'lost-1' });
    expect(replayed).toBe(true);
    expect(w.emulator.counters.jobsCreated).toBe(1);
    const keys = w.emulator.requests.filter((r) => r.method === 'PUT').map((r) => r.idempotencyKey);
    expect(keys).toEqual(['lost-1', 'lost-1']);
    expect((await c.waitForJob(value.job_id)).status).toBe('PUBLISHED');
  });

  it('POST /imports through a 502', async () => {
    w.emulator.faults.add({ method: 'POST', path: /\/imports$/, status: 502 });
    const csv = new TextEncoder().encode('record_id,display_name,api_value\nA-1,One,one\n');
    await w.client().importFile({ bytes: csv, filename: 'a.csv' }, { options: { allow_mass_delete: true } }, { idempotencyKey: 'imp-1' });
    expect(w.seen('POST', '/imports')).toBe(2);
    expect(w.emulator.counters.jobsCreated).toBe(1);
  });

  it('publish with an Idempotency-Key is re-sent after a lost answer and replays', async () => {
    const c = w.client();
    const { value } = await c.createRecord(rec('B-1'), { publish: false });
    w.emulator.faults.add({ method: 'POST', path: /\/publish$/, applyThenDrop: true });
    const res = await c.publishVersion(value.version, {}, { idempotencyKey: 'pub-lost' });
    expect(res).toMatchObject({ value: { version: value.version, status: 'active' }, replayed: true });
    expect(w.emulator.counters.publishes).toBe(1);
  });

  it('gives up after maxAttempts with the last error, action retry', async () => {
    w.emulator.faults.add({ method: 'GET', status: 503, count: 10 });
    const err = await rejectionOf(w.client().getDataset());
    expect(err).toMatchObject({ status: 503, action: 'retry', retryable: true, attempts: 3 });
    expect(w.seen('GET', '')).toBe(3);
  });

  it('a request timeout on a GET is retried (a real delay of half a second)', async () => {
    // The retry must answer within the timeout on a loaded 2-core machine too: 500 ms of room, not 100.
    w.emulator.faults.add({ method: 'GET', delayMs: 2_000 });
    const c = w.client(KEYS.full, { requestTimeoutMs: 500 });
    expect((await c.getDataset()).value.dataset_id).toBe('shop-1');
    expect(w.seen('GET', '')).toBe(2);
  });
});

describe('requests not safe to repeat are sent once', () => {
  it('POST /records whose connection drops after apply → OUTCOME_UNKNOWN, exactly one record created', async () => {
    w.emulator.faults.add({ method: 'POST', path: /\/records$/, applyThenDrop: true });
    const c = w.client();
    const err = await rejectionOf(c.createRecord(rec('B-1')));
    expect(err).toMatchObject({ code: 'OUTCOME_UNKNOWN', action: 'retry', retryable: false, status: null });
    expect(w.seen('POST', '/records')).toBe(1);
    expect(w.emulator.counters.recordWrites).toBe(1);
    // The caller re-reads before deciding.
    expect((await c.getRecord('B-1')).value).toEqual(rec('B-1'));
  });

  it('POST /records with a 503 or a reset → OUTCOME_UNKNOWN, not re-sent (even with an Idempotency-Key)', async () => {
    const c = w.client();
    w.emulator.faults.add({ method: 'POST', status: 503 });
    expect(await rejectionOf(c.createRecord(rec('B-1'), { idempotencyKey: 'i-1' }))).toMatchObject({ code: 'OUTCOME_UNKNOWN', status: 503 });
    w.emulator.faults.add({ method: 'POST', reset: true });
    expect(await rejectionOf(c.createRecord(rec('B-2')))).toMatchObject({ code: 'OUTCOME_UNKNOWN' });
    expect(w.seen('POST', '/records')).toBe(2);
  });

  it('POST /records that times out → OUTCOME_UNKNOWN (the server applied it)', async () => {
    w.emulator.faults.add({ method: 'POST', delayMs: 300 });
    const c = w.client(KEYS.full, { requestTimeoutMs: 100 });
    const err = await rejectionOf(c.createRecord(rec('B-1')));
    expect(err).toMatchObject({ code: 'OUTCOME_UNKNOWN', cause: { code: 'TIMEOUT' } });
    expect(w.seen('POST', '/records')).toBe(1);
  });

  it('publish without an Idempotency-Key whose answer is lost → OUTCOME_UNKNOWN, sent once', async () => {
    const c = w.client();
    const { value } = await c.createRecord(rec('B-1'), { publish: false });
    w.emulator.faults.add({ method: 'POST', path: /\/publish$/, applyThenDrop: true });
    expect(await rejectionOf(c.publishVersion(value.version))).toMatchObject({ code: 'OUTCOME_UNKNOWN' });
    expect(w.seen('POST', `/versions/${value.version}/publish`)).toBe(1);
  });

  it('a POST that never left the host (connection refused) is retried, then NETWORK_ERROR', async () => {
    const port = await closedPort();
    const c = new DatasetClient({ baseUrl: `http://127.0.0.1:${port}`, datasetId: 'shop-1', key: new Secret(KEYS.full), clock: w.clock });
    const err = await rejectionOf(c.createRecord(rec('B-1')));
    expect(err).toMatchObject({ code: 'NETWORK_ERROR', action: 'retry', retryable: true, attempts: 3, cause: { code: 'ECONNREFUSED' } });
    await c.close();
  });
});

describe('never retried: 400, 401, 403, 404, 409, 410, 412, 422', () => {
  for (const status of [400, 401, 403, 404, 409, 410, 412, 422]) {
    it(`${status} on a GET is sent once`, async () => {
      w.emulator.faults.add({ method: 'GET', status, count: 5 });
      const err = await rejectionOf(w.client().getDataset());
      expect(err).toMatchObject({ status, retryable: false, attempts: 1 });
      expect(w.seen('GET', '')).toBe(1);
    });
  }
});

describe('Retry-After (A4)', () => {
  it('waits the server’s Retry-After (plus at most the jitter) on the shared clock', async () => {
    w.emulator.faults.add({ method: 'GET', status: 429, code: 'RATE_LIMITED', retryAfterS: 30 });
    const c = w.client();
    await c.getDataset();
    const [first, second] = w.emulator.requests.filter((r) => r.method === 'GET');
    const gap = second!.time - first!.time;
    expect(gap).toBeGreaterThanOrEqual(30_000);
    expect(gap).toBeLessThan(31_000);
    expect(c.stats.backoffWaitMs).toBe(gap);
  });

  it('without Retry-After, backs off with full jitter under the throttle base', async () => {
    w.emulator.faults.add({ method: 'GET', status: 429, code: 'RATE_LIMITED', count: 2 });
    const c = w.client(KEYS.full, { retry: { random: () => 0.999 } });
    await c.getDataset();
    const times = w.emulator.requests.filter((r) => r.method === 'GET').map((r) => r.time);
    expect([times[1]! - times[0]!, times[2]! - times[1]!]).toEqual([499, 999]);
  });
});

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}
