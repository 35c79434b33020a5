import { afterEach, expect, it } from 'vitest';
import { ids, rec, recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => s?.close());

const DAY = 24 * 60 * 60 * 1000;
const planIds = (sc: Scenario) => sc.db.conn.prepare('SELECT plan_id FROM plans ORDER BY created_at').pluck().all() as string[];
const orphanSteps = (sc: Scenario) => sc.db.conn.prepare('SELECT count(*) FROM journal WHERE plan_id NOT IN (SELECT plan_id FROM plans)').pluck().get();

it('finished plans and their journal steps older than 30 days are deleted after a sync; newer ones stay', async () => {
  s = await scenario({ records: recs(10) });
  await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) });
  expect((await s.engine.sync(s.ds, { file: await s.writeExport([...recs(10), rec('a-1')]) })).result).toBe('published');
  expect((await s.engine.sync(s.ds, { file: await s.writeExport([...recs(10), rec('a-1'), rec('a-2')]) })).result).toBe('published');
  const [p1, p2] = planIds(s);

  s.em.emulator.clock.advance(20 * DAY);
  expect((await s.engine.sync(s.ds, { file: await s.writeExport([...recs(10), rec('a-2')]) })).result).toBe('published');
  expect(planIds(s)).toHaveLength(3); // nothing is 30 days old yet
  const p3 = planIds(s)[2];

  s.em.emulator.clock.advance(11 * DAY);
  expect((await s.engine.sync(s.ds, { file: await s.writeExport([...recs(10), rec('a-3')]) })).result).toBe('published');
  const left = planIds(s);
  expect(left).not.toContain(p1);
  expect(left).not.toContain(p2);
  expect(left[0]).toBe(p3);
  expect(left).toHaveLength(2);
  expect(orphanSteps(s)).toBe(0);
});

it('a held change\'s plan is kept however old: approve still sends it', async () => {
  s = await scenario({ records: recs(10), legacy: true });
  await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) });
  expect((await s.engine.sync(s.ds, { file: await s.writeExport([...recs(10), rec('a-1')]) })).result).toBe('published'); // learns the key is legacy
  const file = await s.writeExport([...recs(7), rec('a-1')]);
  expect((await s.engine.sync(s.ds, { file })).result).toBe('held'); // kept unsent: 3 of 11 owned deleted
  const heldPlan = s.engine.status(s.ds).held;
  expect(heldPlan).toMatchObject({ version: null });
  const [first, kept] = planIds(s);

  s.em.emulator.clock.advance(31 * DAY);
  expect((await s.engine.sync(s.ds, { file })).result).toBe('held');
  expect(planIds(s)).toEqual([kept]);
  expect(planIds(s)).not.toContain(first);
  expect((await s.engine.approve(s.ds)).action).toBe('published');
  expect(ids(s.published())).toEqual(ids([...recs(7), rec('a-1')]));
});
