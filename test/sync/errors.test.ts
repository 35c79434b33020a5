import { afterEach, describe, expect, it } from 'vitest';
import { DRAFT_TTL_MS } from '../../src/emulator/index.js';
import { exitCodeFor } from '../../src/sync/outcome.js';
import { ids, rec, recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => s?.close());

describe('every error-table response', () => {
  it('401, 403 API_DISABLED and 404 stop the dataset with a clear message', async () => {
    s = await scenario();
    const file = await s.writeExport(recs(2));
    s.em.emulator.setApiEnabled('shop-1', false);
    const off = await s.engine.sync(s.ds, { file });
    expect(off).toMatchObject({ result: 'stopped', code: 'API_DISABLED' });
    expect(off.message).toMatch(/switch is off/);
    s.em.emulator.setApiEnabled('shop-1', true);
    s.em.emulator.revokeKey(s.key);
    expect(await s.engine.sync(s.ds, { file })).toMatchObject({ result: 'stopped', code: 'UNAUTHORIZED' });
    expect(exitCodeFor('stopped')).toBe(1);
  });

  it('a key without the publish role: the change stays staged, a person must publish it, no loop', async () => {
    s = await scenario({ roles: ['read', 'write', 'replace'] });
    const file = await s.writeExport(recs(3));
    const first = await s.engine.sync(s.ds, { file });
    expect(first.result).toBe('staged');
    expect(s.logs.some((l) => l.event === 'sync.staged' && l.kind === 'publish_required')).toBe(true);
    expect(s.em.emulator.describe('shop-1').draft_version).not.toBeNull();
    const writes = s.em.emulator.counters.recordWrites;
    expect((await s.engine.sync(s.ds, { file })).result).toBe('staged');
    expect(s.em.emulator.counters.recordWrites).toBe(writes);
    // a person then publishing it in the portal: publish-races.test.ts
  });

  it('a legacy key that publishes although staging was asked: recorded as published, with a warning', async () => {
    s = await scenario({ legacy: true });
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(recs(3)) });
    expect(sum.result).toBe('published');
    expect(sum.warnings.join(' ')).toMatch(/reissue the key/);
    expect(s.logs.some((l) => l.event === 'key.warning')).toBe(true);
    expect(s.db.snapshot('shop-1').info().recordCount).toBe(3);
  });

  it('a foreign draft: wait (reported) or discard per on_foreign_draft', async () => {
    s = await scenario({ records: recs(2) });
    s.em.emulator.portalDraft('shop-1', { upsert: [rec('x-1')] });
    const w = await s.engine.sync(s.ds, { file: await s.writeExport(recs(3)) });
    expect(w).toMatchObject({ result: 'waiting', code: 'DRAFT_PENDING' });
    expect(exitCodeFor(w.result)).toBe(3);
    await s.close();
    s = await scenario({ records: recs(2), policy: { on_foreign_draft: 'discard' } });
    s.em.emulator.portalDraft('shop-1', { upsert: [rec('x-1')] });
    const d = await s.engine.sync(s.ds, { file: await s.writeExport(recs(3)) });
    expect(d.result).toBe('published');
    expect(ids(s.published())).toEqual(ids(recs(3)));
  });

  it('a foreign publish in the middle of a sync: 412/CONFLICT, re-read, re-plan, published once', async () => {
    let done = false;
    const holder: { s?: Scenario } = {};
    s = await scenario({
      onRequest: (e) => {
        if (!done && e.method === 'POST' && e.path.endsWith('/records')) {
          done = true;
          holder.s!.em.emulator.portalPublish('shop-1', { upsert: [rec('hand-9')] });
        }
      },
    });
    holder.s = s;
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(2)) });
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(recs(4)) });
    expect(sum.result).toBe('published');
    expect(ids(s.published())).toEqual(['hand-9', ...ids(recs(4))]);
    expect(s.db.snapshot('shop-1').info().activeVersion).toBe(s.em.emulator.describe('shop-1').active_version);
  });

  it('DRAFT_EXPIRED: a held draft that expired is staged again from the current export', async () => {
    s = await scenario();
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) });
    expect((await s.engine.sync(s.ds, { file: await s.writeExport(recs(3)) })).result).toBe('held');
    s.em.emulator.clock.advance(DRAFT_TTL_MS + 1000);
    const r = await s.engine.approve(s.ds);
    expect(r.action).toBe('expired');
    const again = await s.engine.sync(s.ds, { file: await s.writeExport(recs(9)) });
    expect(again.result).toBe('published');
    expect(s.published()).toHaveLength(9);
  });

  it('a replace job that ends FAILED is reported with its rows mapped to file lines; snapshot unchanged', async () => {
    s = await scenario({ records: recs(20), policy: { replace: { max_per_record_changes: 2, prefer_import: false } } });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(20)) });
    const before = s.db.snapshot('shop-1').info();
    s.em.emulator.faults.add({ method: 'PUT', path: /\/records$/, status: 422, code: 'VALIDATION_FAILED', count: 1 } as never);
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(recs(20).map((r) => ({ ...r, display_name: 'N' + r.record_id }))) });
    expect(['rejected', 'failed']).toContain(sum.result);
    expect(s.db.snapshot('shop-1').info().activeVersion).toBe(before.activeVersion);
    expect(s.engine.status(s.ds).openPlan).toBeNull();
  });
});
