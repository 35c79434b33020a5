import { describe, expect, it } from 'vitest';
import { MAX_REISSUE_GRACE_MS } from '../../src/emulator/keys.js';
import { hasCode } from '../../src/errors.js';
import { admin, code, harness, KEY, rec } from './helpers.js';

// Spec, Authentication: "On reissue the old key can be kept valid for a grace period of at most 24 hours";
// errors table: 401 UNAUTHORIZED for a key "missing, revoked or expired".

const HOUR = 3_600_000;

describe('key reissue with a grace period, on the emulator clock', () => {
  it('in process: both keys work until the grace ends, then the old one gets 401 and the new one goes on', async () => {
    const h = await harness();
    const t0 = h.emulator.clock.now();
    const { key: fresh, oldValidUntil } = h.emulator.reissueKey({ key: KEY, graceMs: 2 * HOUR });
    expect(fresh).toMatch(/^tbd_live_/);
    expect(fresh).not.toBe(KEY);
    expect(oldValidUntil).toBe(t0 + 2 * HOUR);
    expect((await h.call('POST', '/records', { body: rec('a') })).status).toBe(201);
    expect((await h.call('POST', '/records', { key: fresh, body: rec('b') })).status).toBe(201);

    h.emulator.clock.advance(2 * HOUR - 1);
    expect((await h.call('GET', '/records')).status).toBe(200);
    h.emulator.clock.advance(1);
    const old = await h.call('GET', '/records');
    expect([old.status, code(old)]).toEqual([401, 'UNAUTHORIZED']);
    const write = await h.call('POST', '/records', { body: rec('c') });
    expect([write.status, code(write)]).toEqual([401, 'UNAUTHORIZED']);
    const now = await h.call('GET', '/records', { key: fresh });
    expect(now.status).toBe(200);
    expect(now.body.records.map((r: { record_id: string }) => r.record_id)).toEqual(['a', 'b']);
  });

  it('a grace of 0 ends the old key at once; more than 24 hours is refused; the new key keeps the roles', async () => {
    const h = await harness({ roles: ['read', 'write'] });
    expect(() => h.emulator.reissueKey({ key: KEY, graceMs: MAX_REISSUE_GRACE_MS + 1 })).toThrow(/24 hours/);
    expect(() => h.emulator.reissueKey({ key: 'tbd_live_nobody', graceMs: 0 })).toThrow(/no such key/);
    const { key: fresh, oldValidUntil } = h.emulator.reissueKey({ key: KEY, graceMs: 0 });
    expect(oldValidUntil).toBeNull();
    expect(code(await h.call('GET', '/records'))).toBe('UNAUTHORIZED');
    // Same roles as before: writes stage, publishing is denied.
    expect((await h.call('POST', '/records', { key: fresh, body: rec('a') })).body).toMatchObject({ staged: true, publish_denied: true });
  });

  it('a reissued legacy key gets the role rules (spec: "reissue to get the new rules")', async () => {
    const h = await harness({ legacy: true });
    const { key: fresh } = h.emulator.reissueKey({ key: KEY, graceMs: HOUR, roles: ['read', 'write'] });
    expect((await h.call('POST', '/records?publish=false', { body: rec('a') })).body).toMatchObject({ status: 'published' });
    expect((await h.call('POST', '/records', { key: fresh, body: rec('b') })).body).toMatchObject({ staged: true, publish_denied: true });
  });

  it('a grace never brings back a revoked key, nor extends one already ending', async () => {
    const h = await harness();
    const first = h.emulator.reissueKey({ key: KEY, graceMs: HOUR });
    const second = h.emulator.reissueKey({ key: KEY, graceMs: 24 * HOUR });
    expect(second.oldValidUntil).toBe(first.oldValidUntil);
    h.emulator.revokeKey(first.key);
    h.emulator.reissueKey({ key: first.key, graceMs: HOUR });
    expect(code(await h.call('GET', '/records', { key: first.key }))).toBe('UNAUTHORIZED');
    try {
      h.emulator.reissueKey({ key: KEY, graceMs: 0, newKey: second.key });
      expect.unreachable();
    } catch (err) {
      expect(hasCode(err, 'CONFLICT')).toBe(true);
    }
  });

  it('over the admin route: POST /keys/reissue, then /clock/advance past the grace', async () => {
    const h = await harness();
    const r = await admin(h, 'POST', '/keys/reissue', { key: KEY, grace_ms: HOUR, new_key: 'tbd_live_reissued_0001' });
    expect(r).toEqual({ status: 201, body: { key: 'tbd_live_reissued_0001', old_key_valid_until: new Date(h.emulator.clock.now() + HOUR).toISOString() } });
    expect((await h.call('GET', '/records')).status).toBe(200);
    await admin(h, 'POST', '/clock/advance', { ms: HOUR });
    expect(code(await h.call('GET', '/records'))).toBe('UNAUTHORIZED');
    expect((await h.call('GET', '/records', { key: 'tbd_live_reissued_0001' })).status).toBe(200);
    expect((await admin(h, 'POST', '/keys/reissue', { key: KEY, grace_ms: 25 * HOUR })).status).toBe(400);
    expect((await admin(h, 'POST', '/keys/reissue', { key: 'tbd_live_nobody', grace_ms: 0 })).status).toBe(404);
    expect((await admin(h, 'POST', '/keys/reissue', { key: KEY })).status).toBe(422);
  });
});
