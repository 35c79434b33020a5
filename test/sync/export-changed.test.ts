import { appendFileSync } from 'node:fs';
import { afterEach, expect, it } from 'vitest';
import { onCrashPoint } from '../../src/sync/executor/crash-hook.js';
import { recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => {
  onCrashPoint(null);
  await s?.close();
});

const renamed = (n: number) => recs(n).map((r) => ({ ...r, display_name: `New ${r.record_id}` }));

it('the export changed after it was read: the records are sent instead, by a plan that names no plan the journal never knew', async () => {
  let file = '';
  let armed = false;
  let n = 0;
  s = await scenario({
    records: recs(30),
    policy: { replace: { max_per_record_changes: 2, job_poll_ms: 100 } },
    // Every answer the server gives during this sync changes the export: the last one before the upload copy lands after the read.
    onRequest: () => {
      if (armed) appendFileSync(file, `\nr-extra-${++n},x,code-x`);
    },
  });
  expect((await s.engine.sync(s.ds, { file: await s.writeExport(recs(30)) })).result).toBe('unchanged');
  file = await s.writeExport(renamed(30));
  const begun: string[] = [];
  onCrashPoint((step) => {
    if (step === 'plan.begun') {
      armed = false;
      begun.push(s.db.journal.openPlan('shop-1')!.planId);
    }
  });
  armed = true;
  const sum = await s.engine.sync(s.ds, { file });
  expect(s.logs.some((l) => l.event === 'sync.planned' && l.kind === 'import_fallback')).toBe(true);
  expect(sum.path).not.toBe('import');
  expect(begun).toHaveLength(1);
  expect(s.db.journal.plan(begun[0]!)?.summary).toMatchObject({ supersedes: null });
});
