import { afterEach, describe, expect, it } from 'vitest';
import { rec, recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => s?.close());

const base = recs(5);
/** The export with r-001's api_value set to `code`. */
const withCode = (code: string) => base.map((r) => (r.record_id === 'r-001' ? rec('r-001', r.display_name, code) : r));
const serverR001 = (sc: Scenario) => sc.published().find((r) => r.record_id === 'r-001')?.api_value;
const foreignLogs = (sc: Scenario) => sc.logs.filter((l) => l.event === 'reconcile.drift' && l.kind === 'foreign_edit' && l.record_id === 'r-001');

describe('a reconcile never reads the connector\'s own change back as a foreign edit (on_foreign_edit: keep)', () => {
  it('a held draft a person published in the portal is confirmed as ours before the rebuild', async () => {
    s = await scenario({ records: base, roles: ['read', 'write', 'replace'], policy: { on_foreign_edit: 'keep' } });
    await s.engine.sync(s.ds, { file: await s.writeExport(base) });
    expect((await s.engine.sync(s.ds, { file: await s.writeExport(withCode('code-v2')) })).result).toBe('staged');
    const st = s.em.emulator.dataset('shop-1');
    st.activate(st.pendingDraft(s.em.emulator.clock.now())!); // a person publishes it in the portal
    s.em.emulator.portalPublish('shop-1', { upsert: [{ ...base[1]!, display_name: 'Hand edit' }] }); // and edits r-002 afterwards

    await s.engine.reconcile(s.ds);
    const snap = s.db.snapshot('shop-1');
    expect(snap.get('r-001')).toMatchObject({ owned: true, foreignFields: [] });
    expect(snap.get('r-002')).toMatchObject({ owned: true, foreignFields: ['display_name'] }); // a real foreign edit is still seen
    expect(foreignLogs(s)).toEqual([]);
    expect(s.engine.status(s.ds).held).toBeNull();

    // The next change of r-001 from the source is sent (staged for a person: the key cannot publish).
    const next = await s.engine.sync(s.ds, { file: await s.writeExport(withCode('code-v3')) });
    expect(next).toMatchObject({ result: 'staged', changes: 1 });
    expect(s.em.emulator.records('shop-1', 'draft').find((r) => r.record_id === 'r-001')?.api_value).toBe('code-v3');
  });

  it('an open plan whose publish went through unanswered is resumed and confirmed before the rebuild', async () => {
    s = await scenario({ records: base, policy: { on_foreign_edit: 'keep' } });
    await s.engine.sync(s.ds, { file: await s.writeExport(base) });
    s.em.emulator.faults.add({ method: 'POST', path: /\/publish$/, count: Infinity, applyThenDrop: true });
    const lost = await s.engine.sync(s.ds, { file: await s.writeExport(withCode('code-v2')) });
    expect(lost.result).not.toBe('published');
    expect(serverR001(s)).toBe('code-v2');
    expect(s.engine.status(s.ds).openPlan).not.toBeNull();
    s.em.emulator.faults.clear();

    await s.engine.reconcile(s.ds);
    expect(s.engine.status(s.ds).openPlan).toBeNull();
    expect(s.db.snapshot('shop-1').get('r-001')).toMatchObject({ owned: true, foreignFields: [] });
    expect(foreignLogs(s)).toEqual([]);
    const next = await s.engine.sync(s.ds, { file: await s.writeExport(withCode('code-v3')) });
    expect(next).toMatchObject({ result: 'published', changes: 1 });
    expect(serverR001(s)).toBe('code-v3');
  });

  it('a draft holding our write and a person\'s change, published by the person: our record is ours, theirs is not', async () => {
    let armed = false;
    const holder: { s?: Scenario } = {};
    s = await scenario({
      records: base,
      policy: { on_foreign_edit: 'keep' },
      onRequest: (e) => {
        if (armed && e.method === 'PATCH') {
          armed = false;
          holder.s!.em.emulator.portalDraft('shop-1', { upsert: [rec('hand-1', 'Seasonal', 'seasonal')] });
        }
      },
    });
    holder.s = s;
    await s.engine.sync(s.ds, { file: await s.writeExport(base) });
    armed = true;
    expect((await s.engine.sync(s.ds, { file: await s.writeExport(withCode('code-v2')) })).code).toBe('DRAFT_MIXED');
    const st = s.em.emulator.dataset('shop-1');
    st.activate(st.pendingDraft(s.em.emulator.clock.now())!);

    await s.engine.reconcile(s.ds);
    const snap = s.db.snapshot('shop-1');
    expect(snap.get('r-001')).toMatchObject({ owned: true, foreignFields: [] });
    expect(snap.get('hand-1')).toMatchObject({ owned: false });
    expect(foreignLogs(s)).toEqual([]);
    const next = await s.engine.sync(s.ds, { file: await s.writeExport(withCode('code-v3')) });
    expect(next).toMatchObject({ result: 'published', changes: 1 });
    expect(serverR001(s)).toBe('code-v3');
  });
});
