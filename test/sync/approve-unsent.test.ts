import { afterEach, describe, expect, it } from 'vitest';
import { recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => s?.close());

/**
 * A change kept unsent (issue 11) is sent by approve under its own journal. An
 * approve that stops half-way leaves the change held and its plan open (the
 * next approve, sync or resume finishes it); a person who then discards it
 * drops all of it: the draft of what went out, and the plan.
 */
describe('approve of a change kept unsent, interrupted', () => {
  it('stopped half-way: still held; discard then drops the draft of what went out and closes the plan', async () => {
    s = await scenario({ records: recs(10) });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) }); // adopts; the key has shown nothing
    expect(await s.engine.sync(s.ds, { file: await s.writeExport(recs(7)) })).toMatchObject({ result: 'held' });
    expect(s.engine.status(s.ds).held).toMatchObject({ version: null });

    // The second DELETE finds the API gone (every retry refused): approve fails after one staged write.
    const down = s.em.emulator.faults.add({ method: 'DELETE', path: /\/records\/r-009$/, status: 503, count: 100 });
    await expect(s.engine.approve(s.ds)).rejects.toMatchObject({ action: 'retry' });
    expect(s.em.emulator.requests.filter((r) => r.method === 'DELETE' && r.status === 200)).toHaveLength(1);
    const draft = s.em.emulator.describe('shop-1').draft_version;
    expect(draft).not.toBeNull();
    expect(s.engine.status(s.ds).held).toMatchObject({ kind: 'guard', version: null });
    expect(s.engine.status(s.ds).openPlan).not.toBeNull();
    s.em.emulator.faults.remove(down);

    const d = await s.engine.discard(s.ds);
    expect(d.action).toBe('discarded');
    expect(s.em.emulator.describe('shop-1').draft_version).toBeNull();
    expect(s.engine.status(s.ds)).toMatchObject({ held: null, openPlan: null });
    expect(s.published()).toHaveLength(10);
    // Nothing of it comes back. The same export is held again, now as a draft: the approved write showed that the key stages.
    expect(await s.engine.sync(s.ds, { file: await s.writeExport(recs(7)) })).toMatchObject({ result: 'held' });
    expect(s.engine.status(s.ds).held?.version).toBe(s.em.emulator.describe('shop-1').draft_version);
    expect(s.published()).toHaveLength(10);
  });

  it('stopped half-way, then approved again: the rest is sent and published once', async () => {
    s = await scenario({ records: recs(10) });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(7)) });
    const down = s.em.emulator.faults.add({ method: 'DELETE', path: /\/records\/r-009$/, status: 503, count: 100 });
    await expect(s.engine.approve(s.ds)).rejects.toMatchObject({ action: 'retry' });
    s.em.emulator.faults.remove(down);
    expect(await s.engine.approve(s.ds)).toMatchObject({ action: 'published' });
    expect(s.published()).toEqual(recs(7));
    expect(s.em.emulator.counters).toMatchObject({ recordWrites: 3, publishes: 1 });
    expect(s.engine.status(s.ds)).toMatchObject({ held: null, openPlan: null });
  });
});
