import { afterEach, describe, expect, it } from 'vitest';
import { HistoryReader } from '../../src/history/reader.js';
import { why } from '../../src/history/why.js';
import type { DatasetConfig } from '../../src/config/schema.js';
import type { DatasetRecord } from '../../src/model/record.js';

import type { Scenario } from '../sync/harness.js';
import { items, stockScenario, writeStock } from '../sync/stock-export.js';

/** Issue 14: pruning by days, versions and size keeps why and restore right for what is kept. */

const DAY = 86_400_000;
let s: Scenario | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

const byId = (a: { record_id: string }, b: { record_id: string }) => (a.record_id < b.record_id ? -1 : 1);
const version = (sc: Scenario) => sc.db.snapshot('shop-1').info().activeVersion!;
const withHistory = (sc: Scenario, history: Record<string, number>) => ({ ...sc.ds, history: { retention_days: 30, retention_versions: 0, max_bytes: 512 * 1_048_576, ...history } }) as DatasetConfig;

/** Day 0 published by stockScenario, then days 1…5 one day apart, each changing i-001's stock and one other record. */
async function fiveDays(sc: Scenario): Promise<Array<{ version: number; records: DatasetRecord[] }>> {
  const days = [{ version: version(sc), records: sc.published().sort(byId) }];
  let list = items(24);
  for (let d = 1; d <= 5; d++) {
    sc.em.emulator.clock.advance(DAY);
    list = list.map((x, i) => (i === 0 ? { ...x, stock: 100 + d } : i === d ? { ...x, price: x.price + d } : x));
    const sum = await sc.engine.sync(sc.ds, { file: await writeStock(sc, list, `day-${d}.csv`) });
    expect(sum.result).toBe('published');
    days.push({ version: version(sc), records: sc.published().sort(byId) });
  }
  return days;
}

describe('history retention', () => {
  it('by days: older points are refused naming the oldest kept; the kept ones restore exactly, why shows what is kept', async () => {
    s = await stockScenario(items(24), { guards: { values: [] } });
    const days = await fiveDays(s);
    s.em.emulator.clock.advance(DAY / 2);
    // 2.5 days back lands between day 3 and day 4: day 3's state is the oldest that must stay.
    const r = s.engine.pruneHistory(withHistory(s, { retention_days: 2.5 }));
    expect(r).not.toBeNull();
    expect(s.logs.some((l) => l.event === 'history.pruned')).toBe(true);
    const oldest = new HistoryReader(s.db.conn, 'shop-1').oldest()!;
    expect(oldest.version).toBe(days[3]!.version);

    const stock = why(s.db.conn, 'shop-1', 'i-001').fields.find((f) => f.field === 'attributes.stock')!;
    expect(stock.value).toBe(105);
    expect(stock.set).toMatchObject({ version: days[5]!.version, file: `${s.dir}/day-5.csv` });
    // Day 4 set 104 (kept); what day 3 set is known as a value, its origin is before the history kept.
    expect(stock.previous).toEqual([
      { value: 104, set: expect.objectContaining({ version: days[4]!.version }) },
      { value: 103, set: null },
    ]);

    const tooOld = await s.engine.restore(s.ds, { version: days[2]!.version });
    expect(tooOld).toMatchObject({ result: 'rejected', code: 'HISTORY_TOO_OLD' });
    expect(tooOld.message).toContain(`oldest version kept is version ${days[3]!.version}`);

    expect(await s.engine.restore(s.ds, { version: days[3]!.version })).toMatchObject({ result: 'published', changes: 3 }); // i-001, and the prices days 4 and 5 moved
    expect(s.published().sort(byId)).toEqual(days[3]!.records);
  });

  it('by versions and by size: the oldest go first, the newest stay restorable', async () => {
    s = await stockScenario(items(24), { guards: { values: [] } });
    const days = await fiveDays(s);
    s.engine.pruneHistory(withHistory(s, { retention_versions: 2 }));
    const h = new HistoryReader(s.db.conn, 'shop-1');
    expect(h.oldest()!.version).toBe(days[3]!.version);
    const bytes = () => s!.db.conn.prepare('SELECT coalesce(sum(length(data)), 0) FROM history_records').pluck().get() as number;
    const before = bytes();
    // The size bound (below the schema's minimum, to bite on a small history): the oldest go until it fits.
    const { pruneHistory } = await import('../../src/history/prune.js');
    pruneHistory(s.db.conn, 'shop-1', { retention_days: 0, retention_versions: 0, max_bytes: 1 }, s.em.emulator.clock.now());
    expect(bytes()).toBeLessThan(before);
    expect(h.oldest()!.version).toBe(days[5]!.version);
    expect(await s.engine.restore(s.ds, { version: days[4]!.version })).toMatchObject({ result: 'rejected', code: 'HISTORY_TOO_OLD' });
    expect(await s.engine.restore(s.ds, { version: days[5]!.version })).toMatchObject({ result: 'unchanged' });
    expect(s.published().sort(byId)).toEqual(days[5]!.records);
  });

  it('a restore prunes the history after it, with no daemon running', async () => {
    s = await stockScenario(items(24), { guards: { values: [] } });
    const days = await fiveDays(s);
    const sum = await s.engine.restore(withHistory(s, { retention_versions: 3 }), { version: days[4]!.version });
    expect(sum).toMatchObject({ result: 'published' });
    // The entries of day 4, day 5 and the restore stay: day 3's state is the oldest that can be brought back.
    expect(new HistoryReader(s.db.conn, 'shop-1').oldest()!.version).toBe(days[3]!.version);
    expect(s.logs.find((l) => l.event === 'history.pruned')).toMatchObject({ oldest_version: days[3]!.version, retention_versions: 3 });
  });
});
