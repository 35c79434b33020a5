import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import type { AttributeValue, DatasetRecord } from '../../src/model/record.js';
import { recordJson, textHash } from '../../src/model/record-json.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import { MIGRATIONS } from '../../src/snapshot/migrations.js';
import { recount, TallyAhead } from '../../src/snapshot/tallies.js';
import { baseFlags } from '../../src/sync/core/value-guards.js';
import { NONZERO, TOP_FIELDS, ZEROABLE } from '../../src/sync/core/record-values.js';
import { tempDir } from '../sync/diff-fixtures.js';

/**
 * Issue 13 (migration 15): the record counts and value-guard bases the
 * snapshot keeps must equal a recount of its records after every kind of
 * write: per-record confirms (added, changed, owned, deleted), adoption, a
 * rebuild (records added, removed, changed, foreign edits, ours owned), a
 * dataset whose tallies were lost, and the migration's fill of an existing
 * database. Values cover every flag: zero, empty, full-width zero, numbers as
 * text, lists, booleans, and text the fast reader leaves to JSON.parse.
 */

let t: ReturnType<typeof tempDir>;
let db: StateDb;
beforeEach(() => {
  t = tempDir();
  db = openStateDb(join(t.dir, 'state.db'), { clock: systemClock });
});
afterEach(() => {
  db.close();
  t.cleanup();
});

const DS = 'shop';
const STOCKS: AttributeValue[] = [0, 3, '', '０', '12', ' 7 ', 'abc', -2, null, true, false, 'a\\"b', 1.5, '1e3'];
const item = (i: number, over: Partial<DatasetRecord> = {}): DatasetRecord =>
  ({
    record_id: `r-${String(i).padStart(3, '0')}`,
    display_name: i % 9 === 0 ? '' : `Item ${i}`,
    api_value: `code-${i}`,
    aliases: i % 4 === 0 ? [`a${i}`] : [],
    attributes: { stock: STOCKS[i % STOCKS.length]!, ...(i % 3 === 0 ? { price: i % 2 === 0 ? '0.00' : `${i}.5` } : {}), ...(i % 5 === 0 ? { 'odd "key"': 'x' } : {}) },
    active: i % 7 !== 0,
    ...over,
  }) as DatasetRecord;
const items = (from: number, to: number, over: (i: number) => Partial<DatasetRecord> = () => ({})) => Array.from({ length: to - from + 1 }, (_, k) => item(from + k, over(from + k)));

/** The tallies counted here from the parsed records (not through the fast reader the snapshot's counts use). */
function parsedCount(ds = DS) {
  let records = 0;
  let owned = 0;
  const bases: Record<string, { zeroable: number; nonzero: number }> = {};
  const count = (f: string, v: unknown) => {
    const flags = baseFlags(v);
    if (flags === 0) return;
    const b = (bases[f] ??= { zeroable: 0, nonzero: 0 });
    if (flags & ZEROABLE) b.zeroable++;
    if (flags & NONZERO) b.nonzero++;
  };
  for (const e of db.snapshot(ds).reader().entries()) {
    records++;
    if (!e.owned) continue;
    owned++;
    const r = JSON.parse(e.json) as DatasetRecord;
    for (const f of TOP_FIELDS) count(f, r[f]);
    for (const [k, v] of Object.entries(r.attributes)) count(`attributes.${k}`, v);
  }
  return { records, owned, bases: Object.fromEntries(Object.entries(bases).sort(([a], [b]) => (a < b ? -1 : 1))) };
}

function expectRecounted(where: string, ds = DS): void {
  const kept = db.snapshot(ds).tallies();
  expect(kept, where).not.toBeNull();
  expect(kept, where).toEqual(recount(db.conn, ds));
  expect(kept, where).toEqual(parsedCount(ds));
}

describe('the tallies the snapshot keeps equal a recount', () => {
  it('after per-record confirms, adoption and rebuilds', () => {
    const s = db.snapshot(DS);
    expect(s.tallies()).toEqual({ records: 0, owned: 0, bases: {} });
    // A first read of the server: not owned.
    const rb = s.beginRebuild();
    rb.add(items(1, 30));
    rb.commit(1);
    expectRecounted('first rebuild');
    expect(s.tallies()).toMatchObject({ records: 30, owned: 0, bases: {} });

    s.confirm({ activeVersion: 2, upserts: items(1, 20, (i) => ({ attributes: { stock: STOCKS[(i + 3) % STOCKS.length]! } })) });
    expectRecounted('confirm: not-owned records upserted (owned from now on)');
    s.confirm({ activeVersion: 3, upserts: items(15, 40), own: ['r-025', 'r-026', 'r-099'], deletes: ['r-002', 'r-028', 'r-404'] });
    expectRecounted('confirm: changed, added, owned, deleted (owned and not)');
    s.confirm({
      activeVersion: 4,
      upsertTexts: items(3, 8, (i) => ({ display_name: `Text ${i}`, attributes: { stock: i - 5 } })).map((r, k) => ({ record_id: r.record_id, json: recordJson(r), line: k + 2 })),
      deletes: ['r-009'],
    });
    expectRecounted('confirm: canonical texts');
    s.confirm({ activeVersion: 5, upserts: items(3, 8, (i) => ({ display_name: `Text ${i}`, attributes: { stock: i - 5 } })) });
    expectRecounted('confirm: the same records again');
    s.adopt(['r-027', 'r-029', 'r-010', 'r-nope']);
    expectRecounted('adopt');

    // The server changed: some records gone, some added by hand, some edited in the portal (foreign edits), ours published by a person.
    const server = [...items(1, 12), ...items(14, 33, (i) => (i % 2 === 0 ? { attributes: { stock: 0 } } : {})), ...items(50, 55)];
    const rb2 = s.beginRebuild();
    rb2.add(server);
    const report = rb2.commit(6, '"v6"', { records: [{ record_id: 'r-031', json: recordJson(server.find((r) => r.record_id === 'r-031')!) }], own: ['r-050', 'r-032'] });
    expect(report.foreignEdits.length).toBeGreaterThan(0);
    expect(report.removed).toBeGreaterThan(0);
    expectRecounted('rebuild: removed, added, foreign edits, ours owned, adopted');
    const rb3 = s.beginRebuild();
    rb3.add([]);
    rb3.commit(7);
    expectRecounted('rebuild: the server emptied');
    expect(s.tallies()).toEqual({ records: 0, owned: 0, bases: {} });
  });

  it('counts() reads them, and a rolled-back confirm leaves them as they were', () => {
    const s = db.snapshot(DS);
    s.confirm({ activeVersion: 1, upserts: items(1, 10) });
    const before = s.tallies();
    function* failing(): Generator<DatasetRecord> {
      yield item(20);
      throw new Error('boom while confirming');
    }
    expect(() => s.confirm({ activeVersion: 2, upserts: failing(), deletes: ['r-001'] })).toThrow('boom');
    expect(s.tallies()).toEqual(before);
    expect(s.counts()).toEqual({ total: 10, owned: 10 });
    // Kept, not counted: a row changed by hand shows in counts() (so the test would see a recount instead).
    db.conn.prepare('UPDATE record_tallies SET records = 99 WHERE dataset = ?').run(DS);
    expect(s.counts()).toEqual({ total: 99, owned: 10 });
  });

  it('a dataset whose tallies were lost is counted again at its next write', () => {
    const s = db.snapshot(DS);
    s.confirm({ activeVersion: 1, upserts: items(1, 10) });
    db.conn.prepare('DELETE FROM record_tallies WHERE dataset = ?').run(DS);
    db.conn.prepare('DELETE FROM value_bases WHERE dataset = ?').run(DS);
    expect(s.tallies()).toBeNull();
    s.confirm({ activeVersion: 2, upserts: items(5, 15) });
    expectRecounted('recounted');
    expect(s.tallies()!.records).toBe(15);
  });
});

describe('migration 15', () => {
  it('fills the tallies of a database written before it', () => {
    db.close();
    const path = join(t.dir, 'v14.db');
    const conn = new Database(path);
    for (const m of MIGRATIONS.filter((x) => x.version <= 14)) conn.exec(m.sql);
    conn.pragma('user_version = 14');
    const ins = conn.prepare('INSERT INTO records (dataset, record_id, json, hash, owned) VALUES (?, ?, ?, ?, ?)');
    for (const [ds, n] of [
      ['shop', 40],
      ['other', 7],
    ] as const) {
      for (const r of items(1, n)) {
        const json = recordJson(r);
        ins.run(ds, r.record_id, json, textHash(json), Number(r.record_id.slice(2)) % 3 === 0 ? 0 : 1);
      }
    }
    conn.close();
    db = openStateDb(path, { clock: systemClock });
    expectRecounted('shop');
    expect(db.snapshot(DS).tallies()).toMatchObject({ records: 40, owned: 27 });
    expectRecounted('other', 'other');
    expect(db.snapshot('other').tallies()!.bases['attributes.stock']).toBeDefined();
  });
});

describe('issue 18: a first confirm\'s tallies counted ahead (TallyAhead)', () => {
  const texts = (rs: DatasetRecord[]) => rs.map((r, k) => ({ record_id: r.record_id, json: recordJson(r), line: k + 2 }));
  async function counted(rs: DatasetRecord[]) {
    const ahead = new TallyAhead('plan-1');
    await ahead.count(texts(rs));
    return ahead.take();
  }

  it('a dataset without records takes the tallies counted ahead of the same records: they equal a recount', async () => {
    const s = db.snapshot(DS);
    const rs = items(1, 4500); // more than one slice: the count gives the event loop its turn between them
    const delta = await counted(rs);
    expect(delta).not.toBeNull();
    s.confirm({ activeVersion: 1, upsertTexts: texts(rs), tallyAhead: delta });
    expectRecounted('first confirm with the tallies counted ahead');
  });

  it('is taken as counted when it counts as many records as the confirm inserts (the caller counts the same plan\'s records)', async () => {
    const s = db.snapshot(DS);
    // Counted over other values: taken all the same, which shows the confirm did not count the records itself.
    const hinted = items(1, 10, () => ({ display_name: '', active: false }));
    db.snapshot('ref').confirm({ activeVersion: 1, upsertTexts: texts(hinted) });
    s.confirm({ activeVersion: 1, upsertTexts: texts(items(1, 10)), tallyAhead: await counted(hinted) });
    expect(s.tallies()).toEqual(db.snapshot('ref').tallies());
    expect(s.tallies()).not.toEqual(recount(db.conn, DS));
  });

  it('is not taken when it does not fit: other counts, a dataset with records, a record written twice, a delete or an adoption', async () => {
    const s = db.snapshot(DS);
    // Counted over fewer records than the confirm inserts.
    s.confirm({ activeVersion: 1, upsertTexts: texts(items(1, 30)), tallyAhead: await counted(items(1, 29)) });
    expectRecounted('a count of other records');
    // The dataset has records now: a hint is not for it.
    s.confirm({ activeVersion: 2, upsertTexts: texts(items(20, 40)), tallyAhead: await counted(items(31, 40)) });
    expectRecounted('a dataset with records');
    // Emptied by a rebuild, then one record twice in the confirm (the second write an update), as many as counted.
    const rb = s.beginRebuild();
    rb.add([]);
    rb.commit(3);
    const twice = [...texts(items(1, 5)), ...texts([item(3, { display_name: 'again' })])];
    s.confirm({ activeVersion: 4, upsertTexts: twice, tallyAhead: await counted(items(1, 6)) });
    expectRecounted('a record written twice');
    const rb2 = s.beginRebuild();
    rb2.add(items(50, 52));
    rb2.commit(5);
    const rb3 = s.beginRebuild();
    rb3.add([]);
    rb3.commit(6);
    s.confirm({ activeVersion: 7, upsertTexts: texts(items(1, 5)), deletes: ['r-002'], tallyAhead: await counted(items(1, 5)) });
    expectRecounted('an inserted record deleted in the same confirm');
  });

  it('take() before the count ends gives nothing; a count that cannot read its records gives nothing and does not throw', async () => {
    const ahead = new TallyAhead('plan-1');
    const running = ahead.count(texts(items(1, 5000)));
    expect(ahead.take()).toBeNull();
    await running;
    expect(ahead.take()).toBeNull();
    function* unreadable(): Generator<{ json: string }> {
      yield { json: recordJson(item(1)) };
      throw Object.assign(new Error('ENOENT: the plan\'s files were removed'), { code: 'ENOENT' });
    }
    const broken = new TallyAhead('plan-2');
    await expect(broken.count(unreadable())).resolves.toBeUndefined();
    expect(broken.take()).toBeNull();
  });
});
