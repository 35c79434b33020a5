import { afterEach, expect, it } from 'vitest';
import { ids, rec, recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => s?.close());

it('a record the server refused (422) never enters the snapshot when its held plan is approved later', async () => {
  s = await scenario({ records: recs(9) });
  // Adopt nine, add the tenth: a staged write shows that the key stages, so the held change is staged as a draft (issue 11).
  await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) });
  // 3 deletes of 10 hold the plan (max_delete_ratio 0.2); the one add is refused by the server.
  s.em.emulator.faults.add({ method: 'POST', path: /records$/, count: 1, status: 422, code: 'VALIDATION_FAILED' });
  const file = await s.writeExport([...recs(7), rec('new-1')]);
  const held = await s.engine.sync(s.ds, { file });
  expect(held).toMatchObject({ result: 'held', rowErrors: 1 });

  const r = await s.engine.approve(s.ds);
  expect(r.action).toBe('published');
  expect(ids(s.published())).not.toContain('new-1');
  const snap = s.db.snapshot('shop-1');
  expect(snap.get('new-1')).toBeNull();
  expect(snap.info().recordCount).toBe(s.published().length);

  // The next sync of the same export sends the refused record again (the fault is spent).
  const again = await s.engine.sync(s.ds, { file });
  expect(again).toMatchObject({ result: 'published', adds: 1 });
  expect(ids(s.published())).toContain('new-1');
});
