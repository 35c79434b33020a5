import { afterEach, describe, expect, it } from 'vitest';
import { recs, scenario, type Scenario } from './harness.js';

/**
 * Review rv18c of issue 18: a large first sync (a job: replace or upload) against a server that is slow and
 * refuses in every way it may (a connection reset while the body is still going out, 429 with Retry-After,
 * JOB_IN_PROGRESS, an applied request whose answer is lost, a job that takes minutes). Never a wrong publish,
 * never a doubled write: the export is published once, by one job.
 */

const open: Scenario[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

const N = 20_000;

for (const [path, method, route] of [
  ['replace', 'PUT', /\/records$/],
  ['import', 'POST', /\/imports$/],
] as const) {
  describe(`review rv18c: a first sync of ${N} records on the ${path} path against a hostile server`, () => {
    it('reset mid-upload, 429 with Retry-After, JOB_IN_PROGRESS, an applied request whose answer is lost, a slow job: published once, by one job', async () => {
      const s = await scenario({ jobDurationMs: 120_000, policy: { replace: { prefer_import: path === 'import', job_poll_ms: 5_000 } } });
      open.push(s);
      const f = s.em.emulator.faults;
      f.add({ method, path: route, reset: true });
      f.add({ method, path: route, status: 429, code: 'RATE_LIMITED', retryAfterS: 2 });
      f.add({ method, path: route, status: 429, code: 'JOB_IN_PROGRESS', retryAfterS: 5 });
      f.add({ method, path: route, applyThenDrop: true });
      f.add({ method: 'GET', path: /\/sync-jobs\//, status: 503, retryAfterS: 1 });
      const rows = recs(N);
      const file = await s.writeExport(rows);
      const results: string[] = [];
      for (let i = 0; i < 5 && !results.some((r) => r.startsWith('published')); i++) {
        const sum = await s.engine.sync(s.ds, { file });
        results.push(`${sum.result}:${sum.path}`);
      }
      expect(results.at(-1), results.join(', ')).toBe(`published:${path}`);
      expect(f.list()).toEqual([]); // every fault fired
      expect(s.published()).toHaveLength(N);
      expect(s.published().map((r) => r.record_id).sort()).toEqual(rows.map((r) => r.record_id).sort());
      expect(s.em.emulator.counters.jobsCreated).toBe(1);
      expect(s.em.emulator.counters.publishes).toBe(1);
      // The server's view of the request that made the job: the whole body, once applied.
      const applied = s.em.emulator.requests.filter((r) => r.method === method && route.test(r.path) && (r.status === 202 || r.appliedStatus === 202));
      expect(applied.length).toBeGreaterThanOrEqual(1);
      expect(new Set(applied.map((r) => r.idempotencyKey)).size).toBe(1);
    });
  });
}
