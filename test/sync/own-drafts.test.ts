import { afterEach, describe, expect, it } from 'vitest';
import { ids, recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => s?.close());

const REPLACE = { replace: { max_per_record_changes: 0, prefer_import: false, job_poll_ms: 100 } };
const isDatasetGet = (e: { method: string; path: string }) => e.method === 'GET' && (e.path === '' || e.path === '/');

/** A scenario whose first sync adopts r-001…r-005; `hook` runs after each request of the later syncs. */
async function armed(hook: (e: { method: string; path: string }, sc: Scenario) => void, policy: Record<string, unknown> = {}): Promise<Scenario> {
  let on = false;
  const holder: { s?: Scenario } = {};
  const sc = await scenario({ records: recs(5), policy, onRequest: (e) => on && hook(e, holder.s!) });
  holder.s = sc;
  await sc.engine.sync(sc.ds, { file: await sc.writeExport(recs(5)) });
  on = true;
  return sc;
}

describe('a draft of ours is never left behind nor taken for someone else\'s', () => {
  it('a refusal (action reject) after a staged write: the plan is closed and its draft, only ours, discarded', async () => {
    let posts = 0;
    s = await armed((e, sc) => {
      // After the first POST was answered, the next one is refused with a 422 that is not about the record.
      if (e.method === 'POST' && e.path.endsWith('/records') && ++posts === 1) {
        sc.em.emulator.faults.add({ method: 'POST', path: /records$/, count: 1, status: 422, code: 'RECORD_LIMIT_REACHED' });
      }
    });
    const file = await s.writeExport(recs(7));
    const sum = await s.engine.sync(s.ds, { file });
    expect(sum).toMatchObject({ result: 'rejected', code: 'RECORD_LIMIT_REACHED' });
    expect(s.engine.status(s.ds).openPlan).toBeNull();
    expect(s.em.emulator.describe('shop-1').draft_version).toBeNull();
    expect(s.em.emulator.counters.discards).toBe(1);
    // Abandoned (no plan follows it), not superseded, and closed with the sync's outcome.
    const planId = (s.logs.find((l) => l.event === 'reconcile.drift' && l.kind === 'plan_abandoned') as { planId?: string } | undefined)?.planId;
    expect(planId).toBeDefined();
    expect(s.db.journal.plan(planId!)).toMatchObject({ status: 'finished', outcome: 'abandoned' });
    expect(s.engine.status(s.ds).lastSync).toMatchObject({ result: 'rejected', detail: { code: 'RECORD_LIMIT_REACHED' } });
    expect((await s.engine.sync(s.ds, { file })).result).toBe('published');
    expect(ids(s.published())).toEqual(ids(recs(7)));
  });

  it('a pending draft a closed plan of ours made is recognised from the journal and discarded, not waited on as foreign', async () => {
    let posts = 0;
    s = await armed((e, sc) => {
      if (e.method === 'POST' && e.path.endsWith('/records') && ++posts === 1) {
        sc.em.emulator.faults.add({ method: 'POST', path: /records$/, count: 3, status: 503 });
      }
    });
    const file = await s.writeExport(recs(7));
    expect((await s.engine.sync(s.ds, { file })).result).toBe('failed');
    // As an earlier version did on a refusal: the plan closed while its draft stayed pending.
    const open = s.db.journal.openPlan('shop-1')!;
    s.db.journal.finishPlan(open.planId, 'rejected');
    expect(s.em.emulator.describe('shop-1').draft_version).not.toBeNull();

    const sum = await s.engine.sync(s.ds, { file });
    expect(sum.result).toBe('published');
    expect(s.logs.some((l) => l.event === 'draft.discarded' && l.kind === 'own_orphan')).toBe(true);
    expect(ids(s.published())).toEqual(ids(recs(7)));
  });

  it('409 DRAFT_PENDING on a replace closes the plan: after the person\'s draft is gone, only the newest export is sent', async () => {
    let gets = 0;
    s = await armed((e, sc) => {
      // 1st dataset read: held gate; 2nd: reconcile; then the PUT meets a draft made in the portal.
      if (isDatasetGet(e) && ++gets === 2) sc.em.emulator.portalDraft('shop-1', { upsert: [recs(1, 90)[0]!] });
    }, REPLACE);
    const blocked = await s.engine.sync(s.ds, { file: await s.writeExport(recs(6)) });
    expect(blocked).toMatchObject({ result: 'waiting', code: 'DRAFT_PENDING' });
    expect(s.engine.status(s.ds)).toMatchObject({ openPlan: null, held: { kind: 'foreign_draft' } });

    const st = s.em.emulator.dataset('shop-1');
    st.discard(st.pendingDraft(s.em.emulator.clock.now())!); // the person drops their draft
    const before = { ...s.em.emulator.counters };
    const next = await s.engine.sync(s.ds, { file: await s.writeExport(recs(8)) });
    expect(next.result).toBe('published');
    expect(s.em.emulator.counters.jobsCreated - before.jobsCreated).toBe(1);
    expect(s.em.emulator.counters.publishes - before.publishes).toBe(1);
    expect(ids(s.published())).toEqual(ids(recs(8)));
  });
});
