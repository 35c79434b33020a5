import { describe, expect, it } from 'vitest';
import { maxInWindow } from '../../src/emulator/index.js';
import { harness, rec, code, KEY } from './helpers.js';

describe('rate limit (A24, A4)', () => {
  it('429 RATE_LIMITED with Retry-After over a sliding 60 s window that counts rejected requests too', async () => {
    const h = await harness();
    h.emulator.configure({ rateLimitPerMinute: 5 });
    for (let i = 0; i < 3; i++) await h.call('GET', '/records');
    h.emulator.clock.advance(30_000);
    // A rejected request (404 here) counts as well.
    await h.call('GET', '/nothing');
    await h.call('GET', '/records');
    const limited = await h.call('GET', '/records');
    expect([limited.status, code(limited)]).toEqual([429, 'RATE_LIMITED']);
    // The window holds 6 hits; the next one is allowed once the two oldest (t=0) have left: 30 s from now.
    expect(limited.headers.get('retry-after')).toBe('30');
    h.emulator.clock.advance(29_999);
    expect((await h.call('GET', '/records')).status).toBe(429);
    h.emulator.clock.advance(1);
    // At t=60 s the three t=0 hits left; the window holds 4 (t=30 s) + 1 rejected at t≈60 s.
    expect((await h.call('GET', '/records')).status).toBe(200);
    expect(h.emulator.requests.filter((r) => r.status === 429)).toHaveLength(2);
  });

  it('is counted per key', async () => {
    const h = await harness();
    h.emulator.configure({ rateLimitPerMinute: 2 });
    const other = h.emulator.addKey({ dataset: 'shop-1' });
    await h.call('GET', '/records');
    await h.call('GET', '/records');
    expect(code(await h.call('GET', '/records'))).toBe('RATE_LIMITED');
    expect((await h.call('GET', '/records', { key: other })).status).toBe(200);
    expect(maxInWindow(h.emulator.requests.filter((r) => r.keyFingerprint !== null))).toBe(4);
  });

  it('defaults to 120 per minute', async () => {
    const h = await harness();
    expect(h.emulator.settings.rateLimitPerMinute).toBe(120);
    const statuses: number[] = [];
    for (let i = 0; i < 121; i++) statuses.push((await h.call('GET', '')).status);
    expect(statuses.filter((s) => s === 429)).toHaveLength(1);
    expect(statuses.at(-1)).toBe(429);
  });

  it('maxInWindow finds the busiest rolling minute', () => {
    expect(maxInWindow([{ time: 0 }, { time: 59_999 }, { time: 60_000 }, { time: 60_001 }])).toBe(3);
    expect(maxInWindow([])).toBe(0);
  });
});

describe('fault injection', () => {
  it('status faults answer in the A1 shape, with Retry-After, N times, matched by method and path', async () => {
    const h = await harness();
    h.emulator.faults.add({ method: 'GET', path: /\/records$/, status: 503, count: 2, retryAfterS: 7 });
    const a = await h.call('GET', '/records');
    expect([a.status, code(a), a.headers.get('retry-after')]).toEqual([503, 'UNAVAILABLE', '7']);
    expect((await h.call('GET', '/versions')).status).toBe(200);
    expect((await h.call('POST', '/records', { body: rec('a') })).status).toBe(201);
    expect((await h.call('GET', '/records')).status).toBe(503);
    expect((await h.call('GET', '/records')).status).toBe(200);
    expect(h.emulator.faults.list()).toEqual([]);
    h.emulator.faults.add({ status: 429, code: 'JOB_IN_PROGRESS' });
    expect(code(await h.call('GET', ''))).toBe('JOB_IN_PROGRESS');
  });

  it('reset destroys the connection without answering and without applying', async () => {
    const h = await harness();
    h.emulator.faults.add({ method: 'POST', path: 'records', reset: true });
    await expect(h.call('POST', '/records', { body: rec('a') })).rejects.toThrow();
    expect(h.emulator.records('shop-1')).toEqual([]);
    expect(h.emulator.requests.at(-1)).toMatchObject({ fault: 'reset', status: null });
    expect((await h.call('POST', '/records', { body: rec('a') })).status).toBe(201);
  });

  it('applyThenDrop applies the request, then drops the connection: the outcome is unknown to the client', async () => {
    const h = await harness();
    h.emulator.faults.add({ method: 'POST', path: '/records$', applyThenDrop: true });
    await expect(h.call('POST', '/records', { body: rec('a') })).rejects.toThrow();
    expect(h.emulator.records('shop-1').map((r) => r.record_id)).toEqual(['a']);
    expect(h.emulator.requests.at(-1)).toMatchObject({ fault: 'drop', status: null, appliedStatus: 201 });
    // A blind re-send is now a duplicate; re-reading shows the write happened.
    expect(code(await h.call('POST', '/records', { body: rec('a') }))).toBe('VALIDATION_FAILED');
    expect((await h.call('GET', '/records/a')).status).toBe(200);
  });

  it('applyThenDrop on a replace with an Idempotency-Key: the retry gets the same job', async () => {
    const h = await harness();
    h.emulator.faults.add({ method: 'PUT', applyThenDrop: true });
    const headers = { 'idempotency-key': 'drop-1' };
    await expect(h.call('PUT', '/records', { body: { records: [rec('a')] }, headers })).rejects.toThrow();
    const retry = await h.call('PUT', '/records', { body: { records: [rec('a')] }, headers });
    expect(retry.status).toBe(202);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(h.emulator.counters.jobsCreated).toBe(1);
    expect(retry.body.job.status).toBe('PUBLISHED');
  });

  it('delay waits (real milliseconds) then goes on normally', async () => {
    const h = await harness();
    h.emulator.faults.add({ path: '/versions', delayMs: 20 });
    const started = Date.now();
    const r = await h.call('GET', '/versions');
    expect(r.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(15);
    expect(h.emulator.requests.at(-1)?.fault).toBe('delay');
  });

  it('a delay longer than the client waits lets the client time out', async () => {
    const h = await harness();
    h.emulator.faults.add({ path: '/records', delayMs: 300 });
    await expect(
      fetch(`${h.base}/records`, { headers: { authorization: `Bearer ${KEY}` }, signal: AbortSignal.timeout(30) }),
    ).rejects.toThrow();
  });
});
