import { afterEach, describe, expect, it } from 'vitest';
import { ids, rec, recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => s?.close());

describe('a person acts in the portal between staging and publishing', () => {
  it('CONFLICT at the publish call (a portal publish after the draft was checked): re-read, re-diff, re-plan, published', async () => {
    let published = false;
    let versionReads = 0;
    const holder: { s?: Scenario } = {};
    s = await scenario({
      onRequest: (e) => {
        // The draft's counts were just read (the 1st read checks the first write made a new draft, the 2nd verifies it);
        // before the connector publishes it, a person publishes something else.
        if (!published && holder.s && e.method === 'GET' && /\/versions\/\d+$/.test(e.path) && ++versionReads === 2) {
          published = true;
          holder.s.em.emulator.portalPublish('shop-1', { upsert: [rec('hand-1')] });
        }
      },
    });
    holder.s = s;
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(recs(3)) });
    expect(published).toBe(true);
    expect(sum.result).toBe('published');
    const publishes = s.em.emulator.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/publish'));
    expect(publishes.map((r) => [r.status, r.errorCode ?? null])).toEqual([
      [409, 'CONFLICT'],
      [200, null],
    ]);
    expect(s.logs.some((l) => l.event === 'reconcile.drift' && l.kind === 'replan' && l.code === 'CONFLICT')).toBe(true);
    expect(s.em.emulator.counters.discards).toBe(1); // the stale draft, not left pending
    expect(ids(s.published())).toEqual(['hand-1', ...ids(recs(3))]);
    const info = s.db.snapshot('shop-1').info();
    expect(info).toMatchObject({ activeVersion: s.em.emulator.describe('shop-1').active_version, recordCount: 4, ownedCount: 3, notOwnedCount: 1 });
  });

  it('a draft staged for a person (no publish role) that the person then publishes: the next sync confirms it without sending it again', async () => {
    s = await scenario({ roles: ['read', 'write', 'replace'] });
    const file = await s.writeExport(recs(3));
    const first = await s.engine.sync(s.ds, { file });
    expect(first).toMatchObject({ result: 'staged', code: 'HELD_PUBLISH_REQUIRED' });
    expect(s.engine.status(s.ds).held).toMatchObject({ kind: 'publish_required' });
    // The person publishes the draft in the portal.
    const st = s.em.emulator.dataset('shop-1');
    const draft = st.pendingDraft(s.em.emulator.clock.now())!;
    st.activate(draft);
    const writes = { ...s.em.emulator.counters };
    s.em.emulator.clearRequests();
    const next = await s.engine.sync(s.ds, { file });
    expect(next.result).toBe('unchanged');
    expect(s.em.emulator.counters).toEqual(writes);
    expect(s.em.emulator.requests.every((r) => r.method === 'GET')).toBe(true);
    expect(s.em.emulator.requests.some((r) => r.path.endsWith('/records'))).toBe(false); // confirmed from the plan, not rebuilt by reading
    expect(s.logs.some((l) => l.event === 'sync.published' && l.kind === 'held_published' && l.version === draft.version)).toBe(true);
    const status = s.engine.status(s.ds);
    expect(status).toMatchObject({ activeVersion: draft.version, records: 3, owned: 3, held: null });
  });
});
