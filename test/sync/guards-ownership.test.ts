import { afterEach, describe, expect, it } from 'vitest';
import { ids, rec, recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => s?.close());

describe('guards, approve and discard; ownership (issue 7)', () => {
  it('holds a mass delete as a draft, then approve publishes it with only the needed flag', async () => {
    s = await scenario();
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) });
    const held = await s.engine.sync(s.ds, { file: await s.writeExport(recs(4)) });
    expect(held.result).toBe('held');
    expect(s.logs.some((l) => l.event === 'guard.held')).toBe(true);
    expect(s.published()).toHaveLength(10); // nothing published
    expect(s.engine.status(s.ds).held?.kind).toBe('guard');
    // the same export again: still held, nothing sent but reads
    const writes = s.em.emulator.counters.recordWrites;
    expect((await s.engine.sync(s.ds, { file: await s.writeExport(recs(4)) })).result).toBe('held');
    expect(s.em.emulator.counters.recordWrites).toBe(writes);
    const r = await s.engine.approve(s.ds);
    expect(r.action).toBe('published');
    expect(r.flags).toEqual({ allow_mass_delete: true, allow_empty: false });
    expect(s.published()).toHaveLength(4);
    expect(s.db.snapshot('shop-1').info().recordCount).toBe(4);
    expect(s.engine.status(s.ds).held).toBeNull();
  });

  it('discard drops the held draft and leaves the dataset as it was', async () => {
    s = await scenario();
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) });
    expect((await s.engine.sync(s.ds, { file: await s.writeExport([]) })).result).not.toBe('published');
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(5)) });
    expect(s.engine.status(s.ds).held?.kind).toBe('guard');
    const r = await s.engine.discard(s.ds);
    expect(r.action).toBe('discarded');
    expect(s.em.emulator.describe('shop-1').draft_version).toBeNull();
    expect(s.published()).toHaveLength(10);
  });

  it('a hand-made record survives per-record sync, replace sync and a guard approval', async () => {
    s = await scenario({ policy: { replace: { max_per_record_changes: 3 } } });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) });
    s.em.emulator.portalPublish('shop-1', { upsert: [rec('hand-1', 'Seasonal')] });
    expect((await s.engine.sync(s.ds, { file: await s.writeExport(recs(11)) })).path).toBe('per_record');
    expect(ids(s.published())).toContain('hand-1');
    const big = await s.engine.sync(s.ds, { file: await s.writeExport(recs(11).map((r) => ({ ...r, display_name: 'X' + r.record_id }))) });
    expect(big.path).toBe('replace');
    expect(big.result).toBe('published');
    expect(big.notOwned).toBe(1);
    expect(ids(s.published())).toContain('hand-1');
    expect((await s.engine.sync(s.ds, { file: await s.writeExport(recs(2)) })).result).toBe('held');
    await s.engine.approve(s.ds);
    expect(ids(s.published())).toEqual(['hand-1', 'r-001', 'r-002']);
  });

  it('first run adopts overlapping records and leaves the rest; full mode deletes within guards', async () => {
    s = await scenario({ records: [...recs(3), rec('hand-1')] });
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(recs(5)) });
    expect(sum.result).toBe('published');
    expect(sum.notOwned).toBe(1);
    expect(s.db.snapshot('shop-1').info().ownedCount).toBe(5);
    await s.close();
    s = await scenario({ records: [...recs(9), rec('hand-1')], policy: { ownership: 'full' } });
    const full = await s.engine.sync(s.ds, { file: await s.writeExport(recs(9)) });
    expect(full.deletes).toBe(1);
    expect(full.result).toBe('published');
    expect(ids(s.published())).not.toContain('hand-1');
  });

  it('a foreign edit of an owned record is overwritten, or kept with on_foreign_edit: keep', async () => {
    for (const mode of ['overwrite', 'keep'] as const) {
      s = await scenario({ policy: { on_foreign_edit: mode } });
      await s.engine.sync(s.ds, { file: await s.writeExport(recs(3)) });
      s.em.emulator.portalPublish('shop-1', { upsert: [{ ...rec('r-001'), display_name: 'Edited by hand' }] });
      await s.engine.sync(s.ds, { file: await s.writeExport(recs(3).map((r) => ({ ...r, api_value: 'v2-' + r.record_id }))) });
      const r1 = s.published().find((r) => r.record_id === 'r-001')!;
      expect(r1.api_value).toBe('v2-r-001');
      expect(r1.display_name).toBe(mode === 'keep' ? 'Edited by hand' : 'Item r-001');
      await s.close();
    }
  });
});
