import { afterEach, describe, expect, it } from 'vitest';
import { ids, rec, recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => s?.close());

const writes = (sc: Scenario) => sc.em.emulator.requests.filter((r) => r.method !== 'GET');
const keyWarnings = (sc: Scenario) => sc.logs.filter((l) => l.event === 'key.warning' && l.kind === 'legacy_key');

describe('a legacy key that publishes every write (A12) never gets past the guards', () => {
  it('per-record: stops at the first unexpected publish and keeps the rest unsent; remembered; approve sends the rest', async () => {
    s = await scenario({ records: recs(10), legacy: true });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) });
    // 3 of 10 deleted: over max_delete_ratio 0.2, under the server's half.
    const file = await s.writeExport(recs(7));
    s.em.emulator.clearRequests();
    s.logs.length = 0;
    const held = await s.engine.sync(s.ds, { file });
    expect(held).toMatchObject({ result: 'held', code: 'HELD_GUARD' });
    expect(held.guards.held).toBe(true);
    expect(writes(s).map((r) => [r.method, r.status])).toEqual([['DELETE', 200]]); // one went out, then it stopped
    expect(s.published()).toHaveLength(9);
    expect(s.logs.filter((l) => l.event === 'sync.planned' && l.planId)).toHaveLength(1); // no re-plan wearing the guard down
    expect(keyWarnings(s)).toHaveLength(1);
    expect(s.db.snapshot('shop-1').info()).toMatchObject({ recordCount: 9, keyPublishesSince: expect.any(Number) });
    expect(s.engine.status(s.ds).held).toMatchObject({ kind: 'guard', version: null });

    // The same export again sends nothing.
    s.em.emulator.clearRequests();
    expect((await s.engine.sync(s.ds, { file })).result).toBe('held');
    expect(writes(s)).toEqual([]);

    const ok = await s.engine.approve(s.ds);
    expect(ok.action).toBe('published');
    expect(ids(s.published())).toEqual(ids(recs(7)));
    expect(s.db.snapshot('shop-1').info()).toMatchObject({ recordCount: 7, activeVersion: s.em.emulator.describe('shop-1').active_version });
    expect(s.engine.status(s.ds).held).toBeNull();

    // Known legacy from now on: a change a guard holds is not sent at all; discard drops it.
    s.logs.length = 0;
    s.em.emulator.clearRequests();
    const next = await s.engine.sync(s.ds, { file: await s.writeExport(recs(5)) });
    expect(next).toMatchObject({ result: 'held', code: 'HELD_GUARD' });
    expect(writes(s)).toEqual([]);
    expect(keyWarnings(s)).toHaveLength(1);
    const d = await s.engine.discard(s.ds);
    expect(d).toMatchObject({ action: 'discarded', version: null });
    expect(writes(s)).toEqual([]);
    expect(s.published()).toHaveLength(7);

    // A change within the guards goes out as direct writes (no 412 against a stale base).
    s.em.emulator.clearRequests();
    const small = await s.engine.sync(s.ds, { file: await s.writeExport([...recs(7), rec('new-1')]) });
    expect(small.result).toBe('published');
    expect(writes(s).map((r) => [r.method, r.status])).toEqual([['POST', 201]]);
  });

  it('replace: the first PUBLISHED job teaches it; the next held change stays unsent; approve sends it with the flags it needs', async () => {
    s = await scenario({ records: recs(10), legacy: true, policy: { replace: { max_per_record_changes: 0, prefer_import: false } } });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) });
    // Within the guards: the job publishes at once; recorded as published and the key remembered.
    const first = await s.engine.sync(s.ds, { file: await s.writeExport(recs(9)) });
    expect(first.result).toBe('published');
    expect(first.warnings.join(' ')).toMatch(/legacy key/);
    expect(s.db.snapshot('shop-1').info().keyPublishesSince).not.toBeNull();

    // 6 of 9 deleted: over the guard and over the server's half.
    s.em.emulator.clearRequests();
    const held = await s.engine.sync(s.ds, { file: await s.writeExport(recs(3)) });
    expect(held).toMatchObject({ result: 'held', code: 'HELD_GUARD' });
    expect(writes(s)).toEqual([]);
    expect(s.engine.status(s.ds).held).toMatchObject({ kind: 'guard', version: null });

    const ok = await s.engine.approve(s.ds);
    expect(ok).toMatchObject({ action: 'published', flags: { allow_mass_delete: true, allow_empty: false } });
    const put = s.em.emulator.requests.find((r) => r.method === 'PUT');
    expect(put?.status).toBe(202);
    expect(ids(s.published())).toEqual(ids(recs(3)));
    expect(s.db.snapshot('shop-1').info().recordCount).toBe(3);
  });
});
