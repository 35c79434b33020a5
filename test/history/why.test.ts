import { afterEach, describe, expect, it } from 'vitest';
import { why, whyLines } from '../../src/history/why.js';
import { sha256 } from '../../src/model/canonical.js';
import { readFileSync } from 'node:fs';
import type { Scenario } from '../sync/harness.js';
import { rec } from '../sync/harness.js';
import { items, stockScenario, writeStock } from '../sync/stock-export.js';

/** Issue 14: `why` from the state database alone, after real syncs against the emulator. */

let s: Scenario | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

describe('why', () => {
  it('an added, a changed, a deleted and a hand-made record', async () => {
    const list = items(50);
    s = await stockScenario(list, {}, [rec('hand-1', 'Made by hand')]);
    const day0 = `${s.dir}/day-0.csv`;
    const v0 = s.db.snapshot('shop-1').info().activeVersion!;
    const day1 = await writeStock(s, list.map((x) => (x.id === 'i-003' ? { ...x, stock: 99 } : x)), 'day-1.csv');
    expect((await s.engine.sync(s.ds, { file: day1 })).result).toBe('published');
    const v1 = s.db.snapshot('shop-1').info().activeVersion!;
    const day2 = await writeStock(s, list.filter((x) => x.id !== 'i-004').map((x) => (x.id === 'i-003' ? { ...x, stock: 98 } : x)), 'day-2.csv');
    expect((await s.engine.sync(s.ds, { file: day2 })).result).toBe('published');
    const v2 = s.db.snapshot('shop-1').info().activeVersion!;

    // Added by day-0 (line 2 is i-001's: the header is line 1), never changed since.
    const added = why(s.db.conn, 'shop-1', 'i-001');
    expect(added.status).toBe('published');
    const stock = added.fields.find((f) => f.field === 'attributes.stock')!;
    expect(stock).toMatchObject({ value: 1, previous: [] });
    expect(stock.set).toMatchObject({ version: v0, file: day0, fileHash: sha256(readFileSync(day0)), line: 2, kind: 'sync' });
    expect(stock.set!.sync).toMatch(/^plan-/);

    // Changed twice: set by day-2 line 4, was 99 (day-1), was 3 (day-0).
    const changed = why(s.db.conn, 'shop-1', 'i-003');
    const st = changed.fields.find((f) => f.field === 'attributes.stock')!;
    expect(st.value).toBe(98);
    expect(st.set).toMatchObject({ version: v2, file: day2, line: 4 });
    expect(st.previous).toEqual([
      { value: 99, set: expect.objectContaining({ version: v1, file: day1, line: 4 }) },
      { value: 3, set: expect.objectContaining({ version: v0, file: day0, line: 4 }) },
    ]);
    // A field the later syncs did not touch is still day-0's.
    expect(changed.fields.find((f) => f.field === 'display_name')!.set).toMatchObject({ version: v0, file: day0 });

    const deleted = why(s.db.conn, 'shop-1', 'i-004');
    expect(deleted.status).toBe('deleted');
    expect(deleted.deleted).toMatchObject({ version: v2, file: day2, fileHash: sha256(readFileSync(day2)), deleteRatio: 0.02, deletable: 50, approved: false });
    expect(deleted.record).toMatchObject({ record_id: 'i-004', attributes: { stock: 4 } });

    const hand = why(s.db.conn, 'shop-1', 'hand-1');
    expect(hand.status).toBe('not_owned');
    expect(hand.fields.find((f) => f.field === 'display_name')).toMatchObject({ value: 'Made by hand', set: { kind: 'server' } });
    expect(whyLines(hand)[0]).toContain('not owned by the connector');

    expect(why(s.db.conn, 'shop-1', 'nope').status).toBe('unknown');
    expect(whyLines(changed).join('\n')).toContain(`${day2} line 4`);
  });

  it('a change published directly (no draft) names its export line too', async () => {
    const list = items(100);
    s = await stockScenario(list, { direct_publish_max_changes: 10 });
    const extra = { id: 'i-200', name: 'New', stock: 1, price: 5 };
    // The first change of the key is staged, to learn that it stages; the next one goes direct.
    const day1 = await writeStock(s, [...list.map((x) => (x.id === 'i-050' ? { ...x, stock: 77 } : x)), extra], 'day-1.csv');
    expect((await s.engine.sync(s.ds, { file: day1 })).result).toBe('published');
    const day2 = await writeStock(s, [...list.map((x) => (x.id === 'i-060' ? { ...x, stock: 66 } : x)), extra], 'day-2.csv');
    const direct = await s.engine.sync(s.ds, { file: day2 });
    expect(direct).toMatchObject({ result: 'published', path: 'per_record' });
    expect(s.db.journal.openPlan('shop-1')).toBeNull();
    const st = why(s.db.conn, 'shop-1', 'i-060').fields.find((f) => f.field === 'attributes.stock')!;
    expect(st.value).toBe(66);
    expect(st.set).toMatchObject({ file: day2, line: 61 });
  });
});
