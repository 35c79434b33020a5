import { afterEach, describe, expect, it } from 'vitest';
import { ids, interruptedSync, recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => s?.close());

/** A scenario whose first sync adopts r-001…r-010; `hook` runs after each request of the later syncs. */
async function armed(hook: (e: { method: string; path: string }) => void, opts: Parameters<typeof scenario>[0] = {}): Promise<Scenario> {
  let on = false;
  const sc = await scenario({ records: recs(10), ...opts, onRequest: (e) => on && hook(e) });
  await sc.engine.sync(sc.ds, { file: await sc.writeExport(recs(10)) });
  on = true;
  return sc;
}

describe('a sync stops between journaled steps when its signal aborts (graceful stop)', () => {
  it('per-record: the write in flight completes, nothing more is sent, the plan stays open and resumes', async () => {
    const cut = await interruptedSync();
    s = cut.s;
    expect(cut.summary).toMatchObject({ result: 'interrupted', code: 'INTERRUPTED' });
    expect(cut.posts()).toBe(2);
    expect(s.em.emulator.counters.recordWrites).toBe(2);
    expect(s.engine.status(s.ds).openPlan).not.toBeNull();

    const resumed = await s.engine.resume(s.ds);
    // The resume reports the plan it finished (not 0 counts).
    expect(resumed).toMatchObject({ result: 'published', adds: 4, changes: 0, deletes: 0, path: 'per_record' });
    expect(resumed.version).not.toBeNull();
    expect(ids(s.published())).toEqual(ids(recs(14)));
    expect(s.em.emulator.counters).toMatchObject({ recordWrites: 4, publishes: 1, discards: 0 });
    expect(s.engine.status(s.ds).openPlan).toBeNull();
  });

  it('replace: stopping while the job runs keeps its id; the next sync polls it, no second job', async () => {
    const stop = new AbortController();
    s = await armed(
      (e) => {
        if (e.path.includes('/sync-jobs/')) stop.abort();
      },
      { jobDurationMs: 5_000, policy: { replace: { max_per_record_changes: 0, prefer_import: false, job_poll_ms: 100 } } },
    );
    const file = await s.writeExport(recs(12));
    const sum = await s.engine.sync(s.ds, { file }, { signal: stop.signal });
    expect(sum.result).toBe('interrupted');
    expect(s.em.emulator.counters.jobsCreated).toBe(1);
    expect(s.engine.status(s.ds).openPlan).not.toBeNull();

    const next = await s.engine.sync(s.ds, { file });
    expect(next.result).toBe('published');
    expect(s.em.emulator.counters).toMatchObject({ jobsCreated: 1, publishes: 1 });
    expect(ids(s.published())).toEqual(ids(recs(12)));
  });

  it('the same export synced again after a stop reports the plan it finished, with its version', async () => {
    const cut = await interruptedSync();
    s = cut.s;
    const file = cut.file;
    expect(cut.summary.result).toBe('interrupted');
    const again = await s.engine.sync(s.ds, { file });
    expect(again).toMatchObject({ result: 'published', adds: 4, changes: 0, deletes: 0, version: s.em.emulator.describe('shop-1').active_version });
    expect(ids(s.published())).toEqual(ids(recs(14)));
  });

  it('an already aborted signal: nothing is read or sent', async () => {
    s = await scenario({ records: recs(3) });
    const stop = new AbortController();
    stop.abort();
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(recs(4)) }, { signal: stop.signal });
    expect(sum).toMatchObject({ result: 'interrupted', requests: 0 });
    expect(s.em.emulator.requests).toEqual([]);
  });
});
