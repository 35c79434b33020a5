import { afterEach, describe, expect, it } from 'vitest';
import { ids, rec, recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => s?.close());

describe('sync: per-record and replace, staged then published', () => {
  it('first run publishes the export per record through a draft and advances the snapshot', async () => {
    s = await scenario();
    const file = await s.writeExport(recs(5));
    const sum = await s.engine.sync(s.ds, { file });
    expect(sum.result).toBe('published');
    expect(sum.path).toBe('per_record');
    expect(sum.adds).toBe(5);
    expect(ids(s.published())).toEqual(ids(recs(5)));
    const info = s.db.snapshot('shop-1').info();
    expect(info.recordCount).toBe(5);
    expect(info.activeVersion).toBe(s.em.emulator.describe('shop-1').active_version);
    // staged: every write went with publish=false, one publish
    expect(s.em.emulator.counters.publishes).toBe(1);
    const again = await s.engine.sync(s.ds, { file });
    expect(again.result).toBe('unchanged');
    expect(s.logs.filter((l) => l.event === 'sync.summary')).toHaveLength(2);
  });

  it('a large change goes as one replace job, staged, checked and published', async () => {
    s = await scenario({ records: recs(300), policy: { replace: { max_per_record_changes: 10, prefer_import: false } } });
    const changed = recs(300).map((r, i) => (i < 50 ? { ...r, display_name: `New ${r.record_id}` } : r));
    const file = await s.writeExport([...changed, ...recs(20, 301)]);
    const sum = await s.engine.sync(s.ds, { file });
    expect(sum.path).toBe('replace');
    expect(sum.result).toBe('published');
    expect(s.published()).toHaveLength(320);
    expect(s.published().find((r) => r.record_id === 'r-001')?.display_name).toBe('New r-001');
    expect(s.em.emulator.counters.jobsCreated).toBe(1);
    expect(s.db.snapshot('shop-1').info().recordCount).toBe(320);
  });

  it('publishes small changes directly when the policy opts in', async () => {
    s = await scenario({ records: recs(10), policy: { direct_publish_max_changes: 5 } });
    expect((await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) })).result).toBe('unchanged'); // adopts all ten
    const file = await s.writeExport([...recs(10).slice(0, 9), rec('r-new')]);
    const sum = await s.engine.sync(s.ds, { file });
    expect(sum.result).toBe('published');
    expect(ids(s.published())).toContain('r-new');
    expect(ids(s.published())).not.toContain('r-010');
    expect(s.em.emulator.describe('shop-1').versions.some((v) => v.status === 'draft')).toBe(false);
    expect(s.db.snapshot('shop-1').info().activeVersion).toBe(s.em.emulator.describe('shop-1').active_version);
  });
});
