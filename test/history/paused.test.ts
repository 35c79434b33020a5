import { afterEach, describe, expect, it } from 'vitest';
import { exitCodeForSync } from '../../src/cli/exit-codes.js';
import { planLines } from '../../src/cli/commands/plan.js';
import { ids, interruptedSync, recs, scenario, type Scenario } from '../sync/harness.js';
import { itemRecord, items, publishedAttrs, stockScenario, writeStock } from '../sync/stock-export.js';

/**
 * Issue 14: a paused dataset publishes nothing from an export, on every path
 * through the engine (sync, retry, the daemon's file jobs, run --once), and
 * an interrupted plan of it is not continued by the daemon; approve and
 * restore, explicit actions of a person on the dataset, still publish.
 * Against the emulator over real HTTP.
 */

let s: Scenario | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

const OPEN = { guards: { values: [] } };
const writes = (sc: Scenario) => {
  const c = sc.em.emulator.counters;
  return c.recordWrites + c.publishes + c.jobsCreated;
};

describe('a paused dataset', () => {
  it('a sync publishes nothing and says DATASET_PAUSED: the dataset, who paused it and when, the command to resume; exit 75', async () => {
    const list = items(5);
    s = await stockScenario(list, OPEN);
    const before = publishedAttrs(s);
    const at = s.em.emulator.clock.now();
    s.engine.pause(s.ds, 'pause by alice@till-1');
    const sent = writes(s);
    const file = await writeStock(s, list.map((x) => ({ ...x, stock: 0 })), 'zero.csv');
    const sum = await s.engine.sync(s.ds, { file });
    expect(sum).toMatchObject({ result: 'paused', code: 'DATASET_PAUSED', action: 'retry', requests: 0, adds: 0, changes: 0 });
    expect(sum.message).toContain('shop-1 is paused since');
    expect(sum.message).toContain(new Date(at).toISOString().slice(0, 16));
    expect(sum.message).toContain('pause by alice@till-1');
    expect(sum.message).toContain('dataset-connector resume shop-1');
    expect(exitCodeForSync(sum)).toBe(75);
    expect(writes(s)).toBe(sent);
    expect(publishedAttrs(s)).toEqual(before);
    expect(s.logs.find((l) => l.event === 'sync.skipped' && l.reason === 'paused')).toMatchObject({ code: 'DATASET_PAUSED', paused_by: 'pause by alice@till-1' });

    // plan still prints the plan, and says the dataset is paused.
    const plan = await s.engine.plan(s.ds, file);
    expect(plan.plan!.counts.changes).toBe(5);
    expect(plan.paused).toMatchObject({ by: 'pause by alice@till-1', resume: 'dataset-connector resume shop-1' });
    expect(planLines(plan).join('\n')).toMatch(/PAUSED since .*a sync would publish nothing \(DATASET_PAUSED\) until dataset-connector resume shop-1/);

    s.engine.resumeExports(s.ds);
    expect(await s.engine.sync(s.ds, { file })).toMatchObject({ result: 'published', changes: 5 });
  });

  it('an interrupted plan is not continued by the daemon (resume, reconcile) while paused; after resume it is', async () => {
    const cut = await interruptedSync();
    s = cut.s;
    expect(cut.summary.result).toBe('interrupted');
    expect(s.engine.status(s.ds).openPlan).not.toBeNull();
    const sent = writes(s);
    s.engine.pause(s.ds, 'pause by bob');
    expect(await s.engine.resume(s.ds)).toMatchObject({ result: 'paused', code: 'DATASET_PAUSED' });
    expect((await s.engine.reconcile(s.ds)).rebuilt).toBeNull();
    expect(writes(s)).toBe(sent);
    expect(s.engine.status(s.ds).openPlan).not.toBeNull();

    s.engine.resumeExports(s.ds);
    expect(await s.engine.resume(s.ds)).toMatchObject({ result: 'published', adds: 4 });
    expect(ids(s.published())).toEqual(ids(recs(14)));
    expect(s.engine.status(s.ds).openPlan).toBeNull();
  });

  it('approve and restore, asked for by a person on this dataset, still publish', async () => {
    const list = items(30);
    s = await stockScenario(list);
    const v0 = s.db.snapshot('shop-1').info().activeVersion!;
    // A bad export held by the default value guard, then the dataset paused.
    const held = await s.engine.sync(s.ds, { file: await writeStock(s, list.map((x) => ({ ...x, stock: 0 })), 'zero.csv') });
    expect(held.result).toBe('held');
    s.engine.pause(s.ds, 'pause by carol');
    expect(await s.engine.approve(s.ds)).toMatchObject({ action: 'published' });
    expect([...publishedAttrs(s).values()].every((a) => a.stock === 0)).toBe(true);
    const back = await s.engine.restore(s.ds, { version: v0 });
    expect(back).toMatchObject({ result: 'published', changes: 30 });
    expect(s.published().sort((a, b) => a.record_id.localeCompare(b.record_id))).toEqual(list.map(itemRecord));
    expect(s.db.snapshot('shop-1').paused()).toMatchObject({ by: 'pause by carol' });
  });
});

describe('a pause made while a sync runs', () => {
  it('stops it before publishing: the staged change is held (paused), approve publishes it', async () => {
    let pauseOn: 'dataset' | null = null;
    let busy: unknown = null;
    s = await scenario({
      records: recs(10),
      onRequest: (e) => {
        // The person pauses while the records are being sent (another process: the state db row).
        if (pauseOn && e.method === 'POST' && e.path.endsWith('/records')) {
          // What `pause` tells the person: a sync works on the dataset right now (its lock).
          busy = s!.engine.workingNow(s!.ds);
          s!.engine.pause(s!.ds, 'pause by dora');
        }
      },
    });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) });
    const before = ids(s.published());
    const publishes = s.em.emulator.counters.publishes;
    pauseOn = 'dataset';
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(recs(12)) });
    pauseOn = null;
    expect(sum).toMatchObject({ result: 'staged', code: 'HELD_STAGED' });
    expect(busy).toMatchObject({ pid: process.pid });
    expect(s.engine.workingNow(s.ds)).toBeNull();
    expect(sum.message).toContain('paused while this sync ran, before it published');
    expect(sum.message).toContain('dataset-connector approve');
    expect(s.em.emulator.counters.publishes).toBe(publishes);
    expect(ids(s.published())).toEqual(before);
    expect(s.engine.status(s.ds).held).toMatchObject({ kind: 'staged' });
    expect(s.logs.find((l) => l.event === 'sync.skipped' && l.kind === 'paused_before_publish')).toBeTruthy();

    expect(await s.engine.approve(s.ds)).toMatchObject({ action: 'published' });
    expect(ids(s.published())).toEqual(ids(recs(12)));
  });
});

describe('a restore over a held change', () => {
  it('says the held change it discards, in plan --restore and in the restore summary', async () => {
    const list = items(30);
    s = await stockScenario(list);
    const v0 = s.db.snapshot('shop-1').info().activeVersion!;
    const held = await s.engine.sync(s.ds, { file: await writeStock(s, list.map((x) => ({ ...x, stock: 0 })), 'zero.csv') });
    expect(held.result).toBe('held');
    const said = /^the held change \(version \d+, guard [^)]+\) is discarded by this restore$/;
    const plan = await s.engine.planRestore(s.ds, { version: v0 });
    expect(planLines(plan).some((l) => said.test(l))).toBe(true);
    const back = await s.engine.restore(s.ds, { version: v0 });
    expect(back.result).toBe('unchanged');
    expect(back.warnings.some((w) => said.test(w))).toBe(true);
    expect(s.engine.status(s.ds).held).toBeNull();
  });
});
