import { afterEach, describe, expect, it } from 'vitest';
import { ids, rec, recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => s?.close());

type Hook = (e: { method: string; path: string }, sc: Scenario) => void;

/** A scenario whose first sync adopts r-001…r-010; `hook` runs after each request of the later syncs. */
async function armed(hook: Hook, policy: Record<string, unknown> = {}): Promise<Scenario> {
  let on = false;
  const holder: { s?: Scenario } = {};
  const sc = await scenario({ records: recs(10), policy, onRequest: (e) => on && hook(e, holder.s!) });
  holder.s = sc;
  await sc.engine.sync(sc.ds, { file: await sc.writeExport(recs(10)) });
  on = true;
  return sc;
}

const portalStage = (sc: Scenario) => sc.em.emulator.portalDraft('shop-1', { upsert: [rec('hand-1', 'Seasonal', 'seasonal')] });
const isDatasetGet = (e: { method: string; path: string }) => e.method === 'GET' && (e.path === '' || e.path === '/'); // the client's path is relative to the dataset
const draftIds = (sc: Scenario) => ids(sc.em.emulator.records('shop-1', 'draft'));

describe('a draft with a person\'s change in it is never discarded', () => {
  it('a person stages into our draft right after our first staged write: held as a mixed draft, then published by the person', async () => {
    let fired = false;
    s = await armed((e, sc) => {
      if (!fired && e.method === 'POST' && e.path.endsWith('/records')) {
        fired = true;
        portalStage(sc);
      }
    });
    const file = await s.writeExport(recs(12));
    const sum = await s.engine.sync(s.ds, { file });
    expect(sum).toMatchObject({ result: 'waiting', code: 'DRAFT_MIXED' });
    expect(s.em.emulator.counters.discards).toBe(0);
    expect(draftIds(s)).toContain('hand-1');
    expect(s.engine.status(s.ds)).toMatchObject({ held: { kind: 'foreign_draft' }, openPlan: null });
    // Whatever on_foreign_draft says, it waits; the same export sends nothing more.
    const writes = s.em.emulator.counters.recordWrites;
    expect((await s.engine.sync(s.ds, { file })).result).toBe('waiting');
    expect(s.em.emulator.counters).toMatchObject({ recordWrites: writes, discards: 0 });

    // The person publishes it: the next sync confirms and sends the rest.
    const st = s.em.emulator.dataset('shop-1');
    st.activate(st.pendingDraft(s.em.emulator.clock.now())!);
    const next = await s.engine.sync(s.ds, { file });
    expect(next.result).toBe('published');
    expect(ids(s.published())).toEqual(ids([...recs(12), rec('hand-1')]));
    expect(s.db.snapshot('shop-1').info()).toMatchObject({ recordCount: 13, ownedCount: 12 });
  });

  it('a portal draft made after the held gate and before our first write: nothing is sent into it, it waits', async () => {
    let gets = 0;
    s = await armed((e, sc) => {
      // 1st dataset read: held gate; 2nd: reconcile; the draft appears before the check that precedes the first write.
      if (isDatasetGet(e) && ++gets === 2) portalStage(sc);
    });
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(recs(12)) });
    expect(sum).toMatchObject({ result: 'waiting', code: 'DRAFT_PENDING' });
    expect(s.em.emulator.requests.filter((r) => r.method === 'POST')).toEqual([]);
    expect(draftIds(s)).toEqual(ids([...recs(10), rec('hand-1')]));
    expect(s.em.emulator.counters.discards).toBe(0);
    expect(s.engine.status(s.ds).openPlan).toBeNull();
  });

  it('a portal draft made between that check and our first write: the write joined it, so it is held, not discarded', async () => {
    let gets = 0;
    s = await armed((e, sc) => {
      if (isDatasetGet(e) && ++gets === 3) portalStage(sc);
    });
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(recs(12)) });
    expect(sum).toMatchObject({ result: 'waiting', code: 'DRAFT_MIXED' });
    expect(s.em.emulator.requests.filter((r) => r.method === 'POST')).toHaveLength(1); // stopped after the first write
    expect(draftIds(s)).toContain('hand-1');
    expect(s.em.emulator.counters.discards).toBe(0);
  });

  it('under on_foreign_draft: discard, a draft our first write joined is dropped and the sync plans anew', async () => {
    let gets = 0;
    s = await armed((e, sc) => {
      if (isDatasetGet(e) && ++gets === 3) portalStage(sc);
    }, { on_foreign_draft: 'discard' });
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(recs(12)) });
    expect(sum.result).toBe('published');
    expect(ids(s.published())).toEqual(ids(recs(12)));
    expect(s.em.emulator.counters.discards).toBe(1);
  });

  it('a person stages after our draft was checked: the count check holds it as mixed instead of discarding it', async () => {
    let posts = 0;
    s = await armed((e, sc) => {
      if (e.method === 'POST' && e.path.endsWith('/records') && ++posts === 2) portalStage(sc);
    });
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(recs(12)) });
    expect(sum).toMatchObject({ result: 'waiting', code: 'DRAFT_MIXED' });
    expect(s.em.emulator.counters.discards).toBe(0);
    expect(draftIds(s)).toEqual(ids([...recs(12), rec('hand-1')]));
    // The person discards it in the portal: the next sync stages ours again and publishes.
    const st = s.em.emulator.dataset('shop-1');
    st.discard(st.pendingDraft(s.em.emulator.clock.now())!);
    const next = await s.engine.sync(s.ds, { file: await s.writeExport(recs(12)) });
    expect(next.result).toBe('published');
    expect(ids(s.published())).toEqual(ids(recs(12)));
  });
});
