import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { evaluateValueGuards, ValueTallier, type ValueRule } from '../../src/sync/core/value-guards.js';
import { policySchema } from '../../src/config/policy.js';
import { scenario, type Scenario } from './harness.js';
import { itemRecord, items, publishedAttrs, stockScenario, writeStock } from './stock-export.js';

/** Issue 14: guards on field values, against the emulator over real HTTP. */

let s: Scenario | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

const heldLine = (sc: Scenario) => sc.logs.filter((l) => l.event === 'guard.held').at(-1) as { guards: Array<Record<string, unknown>> } | undefined;

describe('value guards (default policy)', () => {
  it('holds an export that sets every stock to 0: nothing published, guard.held with the numbers and five samples old → new', async () => {
    const list = items(100);
    s = await stockScenario(list);
    const before = publishedAttrs(s);
    const sum = await s.engine.sync(s.ds, { file: await writeStock(s, list.map((x) => ({ ...x, stock: 0 })), 'day-1.csv') });
    expect(sum.result).toBe('held');
    expect(sum.message).toContain('value_zeroed_ratio');
    expect(publishedAttrs(s)).toEqual(before);
    const g = heldLine(s)!.guards.find((r) => r.guard === 'value_zeroed_ratio')!;
    expect(g).toMatchObject({ holds: true, field: 'attributes.stock', count: 100, compared: 100, value: 1, limit: 0.25 });
    expect(g.samples).toEqual(list.slice(0, 5).map((x) => ({ record_id: x.id, old: x.stock, new: 0 })));
    // status/approve show the same, from the state db; approve publishes it.
    const preview = s.engine.heldPreview(s.ds)!;
    expect(preview.guards.map((r) => r.guard)).toContain('value_zeroed_ratio');
    expect(preview.guards.find((r) => r.guard === 'value_zeroed_ratio')!.samples).toHaveLength(5);
    expect(await s.engine.approve(s.ds)).toMatchObject({ action: 'published' });
    expect([...publishedAttrs(s).values()].every((a) => a.stock === 0)).toBe(true);
  });

  it('holds an export with every price ×100, and discard drops it', async () => {
    const list = items(60);
    s = await stockScenario(list);
    const before = publishedAttrs(s);
    const file = await writeStock(s, list.map((x) => ({ ...x, price: x.price * 100 })), 'cents.csv');
    const plan = await s.engine.plan(s.ds, file);
    const planned = plan.plan!.guards.results.find((r) => r.guard === 'value_jump_ratio');
    expect(planned).toMatchObject({ holds: true, field: 'attributes.price', count: 60 });
    expect(planned!.samples![0]).toEqual({ record_id: 'i-001', old: 100, new: 10000 });
    const sum = await s.engine.sync(s.ds, { file });
    expect(sum.result).toBe('held');
    expect(publishedAttrs(s)).toEqual(before);
    expect(await s.engine.discard(s.ds)).toMatchObject({ action: 'discarded' });
    expect(publishedAttrs(s)).toEqual(before);
    expect(s.engine.heldPreview(s.ds)).toBeNull();
  });

  it("publishes an ordinary day's changes: some sold out, a few restocked ×20, prices up 5%", async () => {
    const list = items(100);
    s = await stockScenario(list);
    const day = list.map((x, i) =>
      i % 10 === 0 ? { ...x, stock: 0 } // 10% sold out
      : i % 25 === 1 ? { ...x, stock: x.stock * 20 } // a restock
      : i % 3 === 0 ? { ...x, price: Math.round(x.price * 1.05) }
      : i % 2 === 0 ? { ...x, stock: Math.max(1, x.stock - 1) }
      : x,
    );
    const sum = await s.engine.sync(s.ds, { file: await writeStock(s, day, 'day-1.csv') });
    expect(sum.result).toBe('published');
    expect(s.published().sort((a, b) => a.record_id.localeCompare(b.record_id))).toEqual(day.map(itemRecord));
  });

  it('protects a small shop too: 5 records all exported at stock 0 are held; one record going 5 → 0 is published', async () => {
    const list = items(5);
    s = await stockScenario(list);
    const before = publishedAttrs(s);
    const zero = await s.engine.sync(s.ds, { file: await writeStock(s, list.map((x) => ({ ...x, stock: 0 })), 'zero.csv') });
    expect(zero).toMatchObject({ result: 'held' });
    expect(zero.message).toContain('attributes.stock is set to zero or empty in all 5 records that had a value (fewer than min_compared 20');
    expect(publishedAttrs(s)).toEqual(before);
    const g = heldLine(s)!.guards.find((r) => r.guard === 'value_zeroed_ratio')!;
    expect(g).toMatchObject({ field: 'attributes.stock', count: 5, compared: 5 });
    expect(await s.engine.discard(s.ds)).toMatchObject({ action: 'discarded' });

    const one = list.map((x) => (x.id === 'i-005' ? { ...x, stock: 0 } : x));
    expect(list[4]!.stock).toBe(5);
    expect(await s.engine.sync(s.ds, { file: await writeStock(s, one, 'sold-out.csv') })).toMatchObject({ result: 'published', changes: 1 });
    expect(publishedAttrs(s).get('i-005')).toEqual({ stock: 0, price: 540 });
  });

  it('an item already at stock 0 does not make "every stock 0" look like "not every": 5 items (one at 0) all exported at 0 are held; one selling out is published', async () => {
    const list = items(5).map((x) => (x.id === 'i-003' ? { ...x, stock: 0 } : x));
    s = await stockScenario(list);
    const before = publishedAttrs(s);
    const zero = await s.engine.sync(s.ds, { file: await writeStock(s, list.map((x) => ({ ...x, stock: 0 })), 'zero.csv') });
    expect(zero.result).toBe('held');
    expect(zero.message).toContain('attributes.stock is set to zero or empty in all 4 records that had a value');
    expect(publishedAttrs(s)).toEqual(before);
    expect(heldLine(s)!.guards.find((r) => r.guard === 'value_zeroed_ratio')).toMatchObject({ count: 4, compared: 4, value: 1 });
    await s.engine.discard(s.ds);
    const one = list.map((x) => (x.id === 'i-005' ? { ...x, stock: 0 } : x));
    expect(await s.engine.sync(s.ds, { file: await writeStock(s, one, 'sold-out.csv') })).toMatchObject({ result: 'published', changes: 1 });
  });

  it('19 items with one already at 0: every stock exported at 0 is held, every stock ×100 is held', async () => {
    const list = items(19).map((x) => (x.id === 'i-019' ? { ...x, stock: 0 } : x));
    s = await stockScenario(list);
    const before = publishedAttrs(s);
    const zero = await s.engine.sync(s.ds, { file: await writeStock(s, list.map((x) => ({ ...x, stock: 0 })), 'zero.csv') });
    expect(zero.result).toBe('held');
    expect(zero.message).toContain('all 18 records that had a value');
    await s.engine.discard(s.ds);
    const cents = await s.engine.sync(s.ds, { file: await writeStock(s, list.map((x) => ({ ...x, stock: x.stock * 100 })), 'x100.csv') });
    expect(cents.result).toBe('held');
    expect(cents.message).toContain('attributes.stock jumps by more than ×10 or ÷10 or from positive to negative in all 18 records that had a non-zero number');
    expect(publishedAttrs(s)).toEqual(before);
  });

  it('the share counts the records that had stock: 40 items, 20 already at 0, 6 of the other 20 zeroed (30%) is held; 5 (25%) is published', async () => {
    const list = items(40).map((x, i) => (i % 2 === 0 ? { ...x, stock: 0 } : x));
    s = await stockScenario(list);
    const withStock = list.filter((x) => x.stock > 0).map((x) => x.id);
    const zeroSome = (n: number) => list.map((x) => (withStock.slice(0, n).includes(x.id) ? { ...x, stock: 0 } : x));
    const six = await s.engine.sync(s.ds, { file: await writeStock(s, zeroSome(6), 'six.csv') });
    expect(six.result).toBe('held');
    expect(heldLine(s)!.guards.find((r) => r.guard === 'value_zeroed_ratio')).toMatchObject({ count: 6, compared: 20, value: 0.3 });
    expect(six.message).toContain('6 of 20 records that had a value (30.0%; limit 25.0%)');
    await s.engine.discard(s.ds);
    expect(await s.engine.sync(s.ds, { file: await writeStock(s, zeroSome(5), 'five.csv') })).toMatchObject({ result: 'published', changes: 5 });
  });

  it('a small shop with every price ×100 is held; every price +5% is published', async () => {
    const list = items(6);
    s = await stockScenario(list);
    const cents = await s.engine.sync(s.ds, { file: await writeStock(s, list.map((x) => ({ ...x, price: x.price * 100 })), 'cents.csv') });
    expect(cents.result).toBe('held');
    expect(cents.message).toContain('value_jump_ratio');
    await s.engine.discard(s.ds);
    const up = list.map((x) => ({ ...x, price: Math.round(x.price * 1.05) }));
    expect(await s.engine.sync(s.ds, { file: await writeStock(s, up, 'up.csv') })).toMatchObject({ result: 'published', changes: 6 });
  });

  it('a POS bug negating every stock, or setting every stock to -1, is held as a jump; one stock going negative in a big shop is published', async () => {
    const list = items(30);
    s = await stockScenario(list);
    const before = publishedAttrs(s);
    const neg = await s.engine.sync(s.ds, { file: await writeStock(s, list.map((x) => ({ ...x, stock: -x.stock })), 'neg.csv') });
    expect(neg.result).toBe('held');
    expect(neg.message).toContain('attributes.stock jumps by more than ×10 or ÷10 or from positive to negative in 30 of 30 records that had a non-zero number');
    expect((heldLine(s)!.guards.find((r) => r.guard === 'value_jump_ratio')!.samples as unknown[])[0]).toEqual({ record_id: 'i-001', old: 1, new: -1 });
    await s.engine.discard(s.ds);
    const minus = await s.engine.sync(s.ds, { file: await writeStock(s, list.map((x) => ({ ...x, stock: -1 })), 'minus-one.csv') });
    expect(minus.result).toBe('held');
    expect(minus.message).toContain('value_jump_ratio');
    expect(publishedAttrs(s)).toEqual(before);
    await s.engine.discard(s.ds);
    const one = list.map((x) => (x.id === 'i-007' ? { ...x, stock: -2 } : x));
    expect(await s.engine.sync(s.ds, { file: await writeStock(s, one, 'oversold.csv') })).toMatchObject({ result: 'published', changes: 1 });
    expect(publishedAttrs(s).get('i-007')).toEqual({ stock: -2, price: 760 });
  });

  it('full-width "０" as text counts as zeroed: 5 items with text stock all exported as "０" are held; approve publishes "０" as sent', async () => {
    const mapping = { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'Code', 'attributes.stock': 'Stock' } };
    s = await scenario({ mapping });
    const write = async (stocks: string[], name: string) => {
      const file = join(s!.dir, name);
      await writeFile(file, ['SKU,Name,Code,Stock', ...stocks.map((v, i) => `i-${i + 1},Item ${i + 1},code-${i + 1},${v}`)].join('\n') + '\n');
      return file;
    };
    expect(await s.engine.sync(s.ds, { file: await write(['５', '１２', '3', '０', '７'], 'day-0.csv') })).toMatchObject({ result: 'published' });
    const zero = await s.engine.sync(s.ds, { file: await write(['０', '０', '０', '０', '０'], 'zero.csv') });
    expect(zero.result).toBe('held');
    expect(zero.message).toContain('attributes.stock is set to zero or empty in all 4 records that had a value');
    expect(await s.engine.approve(s.ds)).toMatchObject({ action: 'published' });
    expect(s.published().map((r) => r.attributes.stock)).toEqual(['０', '０', '０', '０', '０']);
  });

  it('a rule naming a field replaces * for it (a sale day may move every price)', async () => {
    const list = items(40);
    s = await stockScenario(list, { guards: { values: [{ field: '*', max_zeroed_ratio: 0.25 }, { field: 'attributes.price', max_changed_ratio: 1 }] } });
    const sum = await s.engine.sync(s.ds, { file: await writeStock(s, list.map((x) => ({ ...x, price: x.price * 100 })), 'sale.csv') });
    expect(sum.result).toBe('published');
  });
});

describe('evaluateValueGuards (pure)', () => {
  const rules = policySchema.parse({}).guards.values as ValueRule[];
  const rec = (id: string, stock: unknown, name = 'N') => ({ record_id: id, display_name: name, api_value: id, aliases: [], attributes: { stock } as unknown as Record<string, never>, active: true });

  /** A tallier that compared n records with stock `old` and saw the first `hit` of them set to `now`. */
  const tallied = (n: number, hit: number, old: unknown = 5, now: unknown = 0, r: readonly ValueRule[] = rules) => {
    const t = new ValueTallier(r);
    for (let i = 0; i < n; i++) {
      t.compared(rec(`a${i}`, old));
      if (i < hit) t.observe(rec(`a${i}`, old), rec(`a${i}`, now));
    }
    return t;
  };
  it('below min_compared only every record zeroed holds (from min_all_compared); at it the share decides', () => {
    expect(evaluateValueGuards(tallied(19, 10).tally(), 19, rules)).toEqual([]);
    expect(evaluateValueGuards(tallied(10, 10).tally(), 10, rules).map((r) => r.guard)).toEqual(['value_zeroed_ratio']);
    expect(evaluateValueGuards(tallied(10, 10).tally(), 10, [{ ...rules[0]!, min_all_compared: 0 }])).toEqual([]);
    expect(evaluateValueGuards(tallied(2, 2).tally(), 2, rules)).toEqual([]); // fewer than 3: two items selling out is a day
    expect(evaluateValueGuards(tallied(3, 2).tally(), 3, rules)).toEqual([]); // not every one
    expect(evaluateValueGuards(tallied(40, 10).tally(), 40, rules)).toEqual([]); // 25%: not more than the limit
    expect(evaluateValueGuards(tallied(39, 10).tally(), 39, rules).map((r) => r.guard)).toEqual(['value_zeroed_ratio']);
  });
  it('the zeroed base is the records that had a value, the jump base those that had a non-zero number', () => {
    const t = tallied(4, 4); // four 5 → 0
    for (const [i, v] of [[4, 0], [5, ''], [6, null]] as const) t.compared(rec(`z${i}`, v)); // could not be zeroed
    expect(t.tally().fields['attributes.stock']).toMatchObject({ zeroed: 4, zeroable: 4, nonzero: 4 });
    expect(evaluateValueGuards(t.tally(), 7, rules)[0]).toMatchObject({ guard: 'value_zeroed_ratio', count: 4, compared: 4 });
    const j = tallied(4, 4, 5, 500);
    j.compared(rec('z', 0));
    j.compared(rec('t', 'n/a')); // a value, not a number: no jump from it
    expect(evaluateValueGuards(j.tally(), 6, rules)[0]).toMatchObject({ guard: 'value_jump_ratio', count: 4, compared: 4 });
    // A plan made before the bases were tallied: compared is the base.
    const { zeroable: _z, nonzero: _n, ...older } = t.tally().fields['attributes.stock']!;
    expect(evaluateValueGuards({ fields: { 'attributes.stock': older } }, 7, rules)).toEqual([]);
  });
  it('a jump is ×factor or ÷factor between two non-zero numbers (text numbers too); zero is the zeroed guard, not a jump', () => {
    const t = new ValueTallier([{ field: '*', jump_factor: 10, max_jump_ratio: 0, min_compared: 0 }]);
    t.observe(rec('a', 100), rec('a', 9)); // ÷11
    t.observe(rec('b', '5'), rec('b', '500')); // ×100 as text
    t.observe(rec('c', 5), rec('c', 0));
    t.observe(rec('d', 5), rec('d', 50)); // exactly ×10: not more
    t.observe(rec('e', 5), rec('e', -1)); // positive to negative
    t.observe(rec('f', -3), rec('f', 4)); // negative to positive: a correction, not a jump
    expect(t.tally().fields['attributes.stock']!.jumped).toBe(3);
    expect(t.tally().fields['attributes.stock']!.samples.jumped.map((x) => x.record_id)).toEqual(['a', 'b', 'e']);
  });
  it('an emptied display name counts as zeroed; [] turns the value guards off', () => {
    const t = new ValueTallier(rules);
    for (let i = 0; i < 30; i++) {
      t.compared(rec(`a${i}`, 1, 'Name'));
      t.observe(rec(`a${i}`, 1, 'Name'), rec(`a${i}`, 1, ''));
    }
    expect(evaluateValueGuards(t.tally(), 30, rules)[0]).toMatchObject({ field: 'display_name', guard: 'value_zeroed_ratio' });
    expect(new ValueTallier([]).tally()).toEqual({ fields: {} });
  });
  it('refuses two rules for one field and an unknown field name', () => {
    expect(policySchema.safeParse({ guards: { values: [{ field: 'attributes.x' }, { field: 'attributes.x' }] } }).success).toBe(false);
    expect(policySchema.safeParse({ guards: { values: [{ field: 'stock' }] } }).success).toBe(false);
  });
});
