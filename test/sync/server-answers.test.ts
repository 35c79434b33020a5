import { readFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { rejectFilePath } from '../../src/sources/index.js';
import { exitCodeFor } from '../../src/sync/outcome.js';
import { ids, rec, recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => s?.close());

const sorted = <T extends { record_id: string }>(r: T[]) => [...r].sort((a, b) => (a.record_id < b.record_id ? -1 : 1));
const renamed = (n: number) => recs(n).map((r) => ({ ...r, display_name: `New ${r.record_id}` }));

describe('answers met during a live sync', () => {
  it('OUTCOME_UNKNOWN on a staged POST (applied, answer lost): the draft is re-read, the record is not created twice', async () => {
    s = await scenario({ records: recs(5) });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(5)) }); // adopt
    s.em.emulator.faults.add({ method: 'POST', path: /\/records$/, applyThenDrop: true });
    const target = [...recs(5).slice(1), rec('r-101'), rec('r-102')];
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(target) });
    expect(sum.result).toBe('published');
    expect(s.published()).toEqual(sorted(target));
    const posts = s.em.emulator.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/records'));
    expect(posts.map((p) => p.status)).toEqual([null, 200]); // the dropped one (applied), then the other add
    expect(s.em.emulator.counters.recordWrites).toBe(3); // 2 adds + 1 delete, each once
  });

  it('OUTCOME_UNKNOWN on a directly published POST: GET /records/{id} shows it applied, nothing is sent again', async () => {
    s = await scenario({ records: recs(4), policy: { direct_publish_max_changes: 5 } });
    // The first change goes staged (the key has not shown what it does with publish=false, issue 11); the next ones directly.
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(5)) });
    s.em.emulator.clearRequests();
    const writes = s.em.emulator.counters.recordWrites;
    s.em.emulator.faults.add({ method: 'POST', path: /\/records$/, applyThenDrop: true });
    const target = [...recs(5), rec('r-101')];
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(target) });
    expect(sum.result).toBe('published');
    expect(s.published()).toEqual(sorted(target));
    expect(s.em.emulator.requests.some((r) => r.method === 'GET' && r.path.endsWith('/records/r-101'))).toBe(true);
    expect(s.em.emulator.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/records'))).toHaveLength(1);
    expect(s.em.emulator.counters.recordWrites).toBe(writes + 1);
    expect(s.db.snapshot('shop-1').info()).toMatchObject({ recordCount: 6, activeVersion: s.em.emulator.describe('shop-1').active_version });
  });

  it('JOB_IN_PROGRESS and RATE_LIMITED with Retry-After: the client waits on the injected clock and the sync goes on', async () => {
    s = await scenario({ records: recs(30), policy: { replace: { max_per_record_changes: 2, prefer_import: false, job_poll_ms: 100 } } });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(30)) });
    s.em.emulator.faults.add({ method: 'PUT', path: /\/records$/, status: 429, code: 'JOB_IN_PROGRESS', retryAfterS: 7, count: 2 });
    s.em.emulator.faults.add({ method: 'GET', path: /\/versions\/\d+$/, status: 429, code: 'RATE_LIMITED', retryAfterS: 3 });
    const before = s.em.emulator.clock.now();
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(renamed(30)) });
    expect(sum).toMatchObject({ result: 'published', path: 'replace' });
    expect(sum.retries).toBeGreaterThanOrEqual(3);
    expect(s.em.emulator.clock.now() - before).toBeGreaterThanOrEqual(2 * 7_000 + 3_000); // waited the Retry-Afters, on the emulator's clock
    expect(s.em.emulator.counters.jobsCreated).toBe(1);
    expect(s.published()).toEqual(renamed(30));
  });

  it('403 ACCOUNT_KEY_NOT_SUPPORTED stops the dataset with what to do', async () => {
    s = await scenario({ clientKey: 'tba_live_account_level_key_0000000' });
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(recs(2)) });
    expect(sum).toMatchObject({ result: 'stopped', code: 'ACCOUNT_KEY_NOT_SUPPORTED' });
    expect(sum.message).toMatch(/issue a dataset key \(tbd_live_…\)/);
    expect(exitCodeFor(sum.result)).toBe(1);
    expect(s.engine.status(s.ds).lastSync).toMatchObject({ result: 'stopped' });
    expect(s.logs.some((l) => l.event === 'dataset.stopped' && l.code === 'ACCOUNT_KEY_NOT_SUPPORTED')).toBe(true);
    expect(s.em.emulator.requests.every((r) => r.method === 'GET')).toBe(true);
  });

  it('404 DATASET_NOT_FOUND stops the dataset with what to do', async () => {
    s = await scenario();
    const ds = { ...s.ds, api: { ...s.ds.api, dataset_id: 'shop-404' } };
    const sum = await s.engine.sync(ds, { file: await s.writeExport(recs(2)) });
    expect(sum).toMatchObject({ result: 'stopped', code: 'DATASET_NOT_FOUND' });
    expect(sum.message).toMatch(/check api\.dataset_id and the key/);
    expect(s.engine.status(ds).lastSync).toMatchObject({ result: 'stopped' });
  });

  it("a per-record 422: the record's source line is in the log and in the reject file; the rest is published", async () => {
    s = await scenario({ records: recs(3) });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(3)) });
    // The server's own record rules are not all documented (A6): it refuses the first add, r-104 (line 5 of the export).
    s.em.emulator.faults.add({ method: 'POST', path: /\/records$/, status: 422, code: 'VALIDATION_FAILED', message: 'api_value is not allowed' });
    const file = await s.writeExport([...recs(3), rec('r-104'), rec('r-105')]);
    const sum = await s.engine.sync(s.ds, { file });
    expect(sum.result).toBe('published');
    expect(sum.rowErrors).toBe(1);
    expect(ids(s.published())).toEqual(['r-001', 'r-002', 'r-003', 'r-105']);
    const line = s.logs.find((l) => l.event === 'file.rejected' && l.kind === 'server_row_error');
    expect(line).toMatchObject({ record_id: 'r-104', line: 5, code: 'VALIDATION_FAILED' });
    const rejects = await readFile(rejectFilePath(file), 'utf8');
    expect(rejects).toMatch(/^\uFEFFline,column,value,code,reason\r\n5,record,r-104,INVALID_RECORD,server: VALIDATION_FAILED: api_value is not allowed\r\n$/);
    // The refused record is not in the snapshot, so the next sync tries it again.
    expect(s.db.snapshot('shop-1').info().recordCount).toBe(4);
  });

  it('a replace job that ends FAILED: its row errors go to the log and the reject file at their source lines; the snapshot is unchanged', async () => {
    const holder: { s?: Scenario } = {};
    s = await scenario({
      records: recs(20),
      policy: { replace: { max_per_record_changes: 2, prefer_import: false } },
      onRequest: (e) => {
        // A rule of the server the connector cannot know (A6 leaves some constraints "not shown"): r-007 is refused in the job.
        if (e.method === 'PUT' && e.status === 202) {
          const job = holder.s!.em.emulator.jobs.list().at(-1)!;
          job.rowErrors = [{ row: 7, record_id: 'r-007', field: 'display_name', message: 'contains a word the service does not allow' }];
          job.records = null;
        }
      },
    });
    holder.s = s;
    s.em.emulator.configure({ rowErrors: 'job' });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(20)) });
    const before = s.db.snapshot('shop-1').info();
    const file = await s.writeExport(renamed(20));
    const sum = await s.engine.sync(s.ds, { file });
    expect(sum).toMatchObject({ result: 'failed', code: 'JOB_FAILED', rowErrors: 1 });
    expect(s.logs.find((l) => l.event === 'file.rejected' && l.kind === 'server_row_error')).toMatchObject({ line: 8, column: 'display_name' });
    expect(await readFile(rejectFilePath(file), 'utf8')).toContain('8,display_name,r-007,INVALID_RECORD,server: contains a word the service does not allow');
    expect(s.db.snapshot('shop-1').info()).toMatchObject({ activeVersion: before.activeVersion, recordCount: 20 });
    expect(s.engine.status(s.ds)).toMatchObject({ openPlan: null, lastSync: { result: 'failed' } });
    expect(s.published()).toEqual(recs(20));
  });
});
