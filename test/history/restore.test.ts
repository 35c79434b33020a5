import { afterEach, describe, expect, it } from 'vitest';
import { recount } from '../../src/snapshot/tallies.js';
import type { Scenario } from '../sync/harness.js';
import { itemRecord, items, stockScenario, writeStock, type Item } from '../sync/stock-export.js';

/** Issue 14: restore through the same planner, guards and journal as a sync, against the emulator over real HTTP. */

let s: Scenario | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

const byId = (a: { record_id: string }, b: { record_id: string }) => (a.record_id < b.record_id ? -1 : 1);
const published = (sc: Scenario) => sc.published().sort(byId);
const version = (sc: Scenario) => sc.db.snapshot('shop-1').info().activeVersion!;
const OPEN = { guards: { values: [] } };

describe('restore', () => {
  it('after a bad export was published, --to-version brings back the earlier records exactly', async () => {
    const list = items(40);
    s = await stockScenario(list, OPEN);
    const good = published(s);
    const v0 = version(s);
    const bad = list.map((x) => ({ ...x, stock: 0, price: x.price * 100 }));
    expect((await s.engine.sync(s.ds, { file: await writeStock(s, bad, 'bad.csv') })).result).toBe('published');
    expect(published(s)).toEqual(bad.map(itemRecord));

    const plan = await s.engine.planRestore(s.ds, { version: v0 });
    expect(plan.plan).toMatchObject({ counts: { changes: 40, adds: 0, deletes: 0 }, held: false });
    expect(published(s)).toEqual(bad.map(itemRecord)); // plan sends nothing

    const sum = await s.engine.restore(s.ds, { version: v0 });
    expect(sum).toMatchObject({ result: 'published', changes: 40 });
    expect(sum.file).toContain(`version ${v0}`);
    expect(published(s)).toEqual(good);
    // Issue 13: what the snapshot keeps of its records as a whole followed the restore's writes.
    expect(s.db.snapshot('shop-1').tallies()).toEqual(recount(s.db.conn, 'shop-1'));
    // The restore is in the history too: why names it.
    const { why } = await import('../../src/history/why.js');
    const st = why(s.db.conn, 'shop-1', 'i-001').fields.find((f) => f.field === 'attributes.stock')!;
    expect(st.set).toMatchObject({ kind: 'restore', version: version(s), file: null });
    expect(st.previous[0]).toMatchObject({ value: 0, set: { file: `${s.dir}/bad.csv` } });
  });

  it('--to-time takes the state published at that time; a deleted record comes back', async () => {
    const list = items(30);
    s = await stockScenario(list, OPEN);
    s.em.emulator.clock.advance(3_600_000);
    const day1: Item[] = list.filter((x) => x.id !== 'i-002').map((x) => (x.id === 'i-001' ? { ...x, stock: 7 } : x));
    expect((await s.engine.sync(s.ds, { file: await writeStock(s, day1, 'day-1.csv') })).result).toBe('published');
    const afterDay1 = s.em.emulator.clock.now();
    const stateDay1 = published(s);
    s.em.emulator.clock.advance(3_600_000);
    const day2 = day1.map((x) => ({ ...x, name: `${x.name} (new)` }));
    expect((await s.engine.sync(s.ds, { file: await writeStock(s, day2, 'day-2.csv') })).result).toBe('published');
    s.em.emulator.clock.advance(3_600_000);

    expect(await s.engine.restore(s.ds, { time: afterDay1 + 60_000 })).toMatchObject({ result: 'published' });
    expect(published(s)).toEqual(stateDay1);
    // Back to the first export: i-002 is added again, i-001 has its first stock.
    expect(await s.engine.restore(s.ds, { time: afterDay1 - 3_600_000 })).toMatchObject({ result: 'published', adds: 1 });
    expect(published(s)).toEqual(list.map(itemRecord));
    expect(s.db.snapshot('shop-1').tallies()).toEqual(recount(s.db.conn, 'shop-1'));
  });

  it('a restore that deletes much is held like any change; approve publishes it', async () => {
    const list = items(10);
    s = await stockScenario(list, OPEN);
    const v0 = version(s);
    expect((await s.engine.sync(s.ds, { file: await writeStock(s, items(40), 'more.csv') })).result).toBe('published');
    const sum = await s.engine.restore(s.ds, { version: v0 });
    expect(sum).toMatchObject({ result: 'held', deletes: 30 });
    expect(sum.message).toContain('max_delete_ratio');
    expect(published(s)).toHaveLength(40);
    expect(await s.engine.approve(s.ds)).toMatchObject({ action: 'published' });
    expect(published(s)).toEqual(list.map(itemRecord));
  });

  it('a point older than the history is refused, naming the oldest version kept', async () => {
    s = await stockScenario(items(5), OPEN);
    const { HistoryReader } = await import('../../src/history/reader.js');
    const oldest = new HistoryReader(s.db.conn, 'shop-1').oldest()!;
    const sum = await s.engine.restore(s.ds, { time: oldest.at - 1 });
    expect(sum).toMatchObject({ result: 'rejected', code: 'HISTORY_TOO_OLD' });
    expect(sum.message).toContain('the oldest version kept is');
  });

  it('a version above the newest is refused (not taken for the newest), naming the newest and oldest kept; usage exit code', async () => {
    s = await stockScenario(items(5), OPEN);
    const { HistoryReader } = await import('../../src/history/reader.js');
    const { exitCodeForSync } = await import('../../src/cli/exit-codes.js');
    const h = new HistoryReader(s.db.conn, 'shop-1');
    const newest = h.newest()!.version!;
    const writes = s.em.emulator.counters.recordWrites;
    const sum = await s.engine.restore(s.ds, { version: newest + 1 });
    expect(sum).toMatchObject({ result: 'rejected', code: 'VERSION_TOO_NEW' });
    expect(sum.message).toContain(`version ${newest + 1} is newer than the newest version kept, version ${newest} of `);
    expect(sum.message).toContain(`the history keeps ${h.oldest()!.version === null ? 'the state before the first publish' : `version ${h.oldest()!.version}`} to version ${newest}`);
    expect(exitCodeForSync(sum)).toBe(2);
    expect(s.em.emulator.counters.recordWrites).toBe(writes);
    await expect(s.engine.planRestore(s.ds, { version: newest + 1 })).rejects.toMatchObject({ code: 'VERSION_TOO_NEW' });
    expect(await s.engine.restore(s.ds, { version: newest })).toMatchObject({ result: 'unchanged' });
  });
});
