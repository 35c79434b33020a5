import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rec, recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => s?.close());

/** Replace whenever more than two records change, so a 30-record change takes the replace branch of the planner. */
const REPLACE = { replace: { max_per_record_changes: 2, job_poll_ms: 100 } };
const renamed = (n: number) => recs(n).map((r) => ({ ...r, display_name: `New ${r.record_id}` }));
const writes = (sc: Scenario) => sc.em.emulator.requests.filter((r) => r.method !== 'GET').map((r) => `${r.method} ${r.path.replace(/^.*shop-1/, '')} ${r.status}`);

describe('replace as an upload of the export (POST /imports, A14)', () => {
  it('a file the server maps exactly as the connector does is uploaded, staged, checked and published', async () => {
    s = await scenario({ records: recs(30), policy: REPLACE });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(30)) }); // adopt
    s.em.emulator.clearRequests();
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport([...renamed(30), rec('r-new')]) });
    expect(sum).toMatchObject({ result: 'published', path: 'import', changes: 30, adds: 1 });
    expect(sum.pathReason).toMatch(/POST \/imports/);
    expect(writes(s)).toEqual(['POST /imports 202', expect.stringMatching(/^POST \/versions\/\d+\/publish 200$/)]);
    const upload = s.em.emulator.requests.find((r) => r.path.endsWith('/imports'))!;
    expect(upload.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(s.published()).toEqual([...renamed(30), rec('r-new')]);
    expect(s.em.emulator.counters.jobsCreated).toBe(1);
    expect(s.db.snapshot('shop-1').info()).toMatchObject({ recordCount: 31, activeVersion: s.em.emulator.describe('shop-1').active_version });
    // The plan file and the copy of the export are gone; the rows kept for the next read (issue 18, on by default) stay.
    expect(await readdir(join(s.dir, 'state.db.plans'))).toEqual(['unchanged-rows.shop-1']);
    expect((await s.engine.sync(s.ds, { file: await s.writeExport([...renamed(30), rec('r-new')]) })).result).toBe('unchanged');
  });

  it('a mapping with a transform sends the records (PUT) and says why', async () => {
    s = await scenario({
      records: recs(30),
      policy: REPLACE,
      mapping: { fields: { record_id: 'SKU', display_name: { column: 'Name', transforms: ['trim'] }, api_value: 'Code' } },
    });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(30)) });
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(renamed(30)) });
    expect(sum).toMatchObject({ result: 'published', path: 'replace' });
    expect(sum.pathReason).toMatch(/not an upload: field display_name is not a plain column pick/);
    expect(s.em.emulator.requests.some((r) => r.path.endsWith('/imports'))).toBe(false);
  });

  it('a header our reader cleans (an annotation mark) is not uploaded: the server would not find the column', async () => {
    s = await scenario({ records: recs(30), policy: REPLACE });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(30)) });
    const file = join(s.dir, 'annotated.csv');
    await writeFile(file, ['SKU*,Name,Code', ...renamed(30).map((r) => `${r.record_id},${r.display_name},${r.api_value}`)].join('\n') + '\n');
    const sum = await s.engine.sync(s.ds, { file });
    expect(sum).toMatchObject({ result: 'published', path: 'replace' });
    expect(sum.pathReason).toMatch(/header of record_id \("SKU"\) is written differently/);
    expect(s.published()).toEqual(renamed(30));
  });

  it('records not owned by the connector must be carried over: PUT, never an upload that would delete them', async () => {
    s = await scenario({ records: [...recs(30), rec('hand-1')], policy: REPLACE });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(30)) });
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(renamed(30)) });
    expect(sum).toMatchObject({ result: 'published', path: 'replace' });
    expect(sum.pathReason).toMatch(/1 records not owned by the connector must be carried over/);
    expect(s.published().map((r) => r.record_id)).toContain('hand-1');
  });

  it('an upload the server refuses (422) falls back to PUT in the same sync', async () => {
    s = await scenario({ records: recs(30), policy: REPLACE });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(30)) });
    s.em.emulator.faults.add({ method: 'POST', path: /\/imports$/, status: 422, code: 'MAPPING_REQUIRED' });
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(renamed(30)) });
    expect(sum).toMatchObject({ result: 'published', path: 'replace' });
    expect(sum.warnings.join(' ')).toMatch(/refused the upload \(MAPPING_REQUIRED\)/);
    expect(s.published()).toEqual(renamed(30));
    expect(s.em.emulator.counters.jobsCreated).toBe(1);
  });

  it('an upload whose draft differs from the plan (a value read otherwise, same counts) is discarded and the records are sent instead', async () => {
    let meddled = false;
    const holder: { s?: Scenario } = {};
    s = await scenario({
      records: recs(30),
      policy: REPLACE,
      onRequest: (e) => {
        // Once the upload's job has staged its draft, one record in it reads differently: the draft no longer matches the plan.
        const em = holder.s?.em.emulator;
        if (!meddled && em && e.path.includes('/sync-jobs/') && em.describe('shop-1').draft_version !== null) {
          meddled = true;
          em.portalDraft('shop-1', { upsert: [{ ...renamed(30)[0]!, display_name: 'Read otherwise' }] });
        }
      },
    });
    holder.s = s;
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(30)) });
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(renamed(30)) });
    expect(meddled).toBe(true);
    expect(sum).toMatchObject({ result: 'published', path: 'replace' });
    expect(sum.warnings.join(' ')).toMatch(/draft \d+ differs from the plan/);
    expect(s.published()).toEqual(renamed(30));
    expect(s.em.emulator.counters.discards).toBe(1);
    expect(s.em.emulator.counters.publishes).toBe(1);
  });

  it('a record someone stages into the upload\'s draft: the draft is held for a person, never discarded', async () => {
    let meddled = false;
    const holder: { s?: Scenario } = {};
    s = await scenario({
      records: recs(30),
      policy: REPLACE,
      onRequest: (e) => {
        const em = holder.s?.em.emulator;
        if (!meddled && em && e.path.includes('/sync-jobs/') && em.describe('shop-1').draft_version !== null) {
          meddled = true;
          em.portalDraft('shop-1', { upsert: [rec('x-odd')] });
        }
      },
    });
    holder.s = s;
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(30)) });
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(renamed(30)) });
    expect(meddled).toBe(true);
    expect(sum).toMatchObject({ result: 'waiting', code: 'DRAFT_MIXED' });
    expect(s.em.emulator.counters.discards).toBe(0);
    expect(s.em.emulator.records('shop-1', 'draft').map((r) => r.record_id)).toContain('x-odd');
  });
});
