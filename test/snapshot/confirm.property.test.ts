import fc from 'fast-check';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { keptForeignFields } from '../../src/model/fields.js';
import type { AttributeValue, DatasetRecord } from '../../src/model/record.js';
import { recordJson, textHash } from '../../src/model/record-json.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import { SUSPEND_AFTER } from '../../src/snapshot/generation-triggers.js';
import { HistoryWriter } from '../../src/snapshot/history-writer.js';
import { SnapshotStore } from '../../src/snapshot/store.js';
import { talliesKept, TallyDelta } from '../../src/snapshot/tallies.js';
import type { ConfirmedChange } from '../../src/snapshot/types.js';
import { HistoryReader } from '../../src/history/reader.js';
import { why } from '../../src/history/why.js';
import { tempDir } from '../sync/diff-fixtures.js';

/**
 * Issue 18 restructured confirm() (a first confirm inserts without looking records up and writes first history
 * chunks without looking for them; a large one suspends the generation triggers). Differential: random
 * sequences of confirms, adoptions and server edits (rebuilds) applied to two state dbs, one through the store,
 * one through the confirm as it was before (Reference below, its code as it stood), leave the same records,
 * tallies, history rows (so the same `why` and restore answers), dataset state and triggers, and the generation
 * moves in both alike on every write.
 */

/** SnapshotStore.confirm and adopt as they were before issue 18's change: the oracle. */
class Reference extends SnapshotStore {
  override confirm(change: ConfirmedChange): void {
    const foreign = new Map(
      (
        this.conn
          .prepare('SELECT record_id, json, foreign_fields FROM records INDEXED BY records_foreign WHERE dataset = ? AND foreign_fields IS NOT NULL')
          .all(this.dataset) as Array<{ record_id: string; json: string; foreign_fields: string }>
      ).map((r) => [r.record_id, r] as const),
    );
    const upsert = this.conn.prepare(
      `INSERT INTO records (dataset, record_id, json, hash, owned, foreign_fields, foreign_at)
       VALUES (?, ?, ?, ?, 1, ?, NULL)
       ON CONFLICT (dataset, record_id) DO UPDATE SET json = excluded.json, hash = excluded.hash, owned = 1,
         foreign_fields = excluded.foreign_fields,
         foreign_at = CASE WHEN excluded.foreign_fields IS NULL THEN NULL ELSE records.foreign_at END`,
    );
    const del = this.conn.prepare('DELETE FROM records WHERE dataset = ? AND record_id = ? RETURNING owned, json');
    const current = this.conn.prepare('SELECT owned, json FROM records WHERE dataset = ? AND record_id = ?');
    const tally = new TallyDelta();
    let history: HistoryWriter;
    const put = (id: string, json: string, rec: () => DatasetRecord, line?: number): void => {
      const old = foreign.get(id);
      const row = current.get(this.dataset, id) as { owned: number; json: string } | undefined;
      upsert.run(this.dataset, id, json, textHash(json), old ? keptForeignFields(old.json, old.foreign_fields, rec()) : null);
      if (!row) tally.added(json, true);
      else if (row.owned !== 1) tally.own(json);
      else if (row.json !== json) tally.changed(row.json, json);
      history.record(id, row?.json ?? null, json, line ?? null);
    };
    this.conn.transaction(() => {
      const kept = talliesKept(this.conn, this.dataset);
      history = new HistoryWriter(this.conn, this.dataset, this.clock, change.provenance ?? { kind: 'sync' }, change.activeVersion, this.confirmedVersion());
      for (const rec of change.upserts ?? []) put(rec.record_id, recordJson(rec), () => rec);
      for (const t of change.upsertTexts ?? []) put(t.record_id, t.json, () => JSON.parse(t.json) as DatasetRecord, t.line);
      for (const id of change.deletes ?? []) {
        const before = del.get(this.dataset, id) as { owned: number; json: string } | undefined;
        if (before === undefined) continue;
        tally.removed(before.json, before.owned === 1);
        history.record(id, before.json, null);
      }
      this.#own(change.own ?? [], tally);
      tally.apply(this.conn, this.dataset, kept);
      this.setConfirmed(change.activeVersion, change.etag ?? `"v${change.activeVersion}"`);
      if (change.source) this.recordSource(change.source);
    })();
  }

  override adopt(recordIds: Iterable<string>): void {
    this.conn.transaction(() => {
      const kept = talliesKept(this.conn, this.dataset);
      const tally = new TallyDelta();
      this.#own(recordIds, tally);
      tally.apply(this.conn, this.dataset, kept);
    })();
  }

  #own(recordIds: Iterable<string>, tally: TallyDelta): void {
    const own = this.conn.prepare('UPDATE records SET owned = 1 WHERE dataset = ? AND record_id = ? AND owned = 0 RETURNING json').pluck();
    for (const id of recordIds) {
      const json = own.get(this.dataset, id) as string | undefined;
      if (json !== undefined) tally.own(json);
    }
  }
}

const DS = 'shop';
let t: ReturnType<typeof tempDir>;
let now = 1_000;
const clock: Clock = { now: () => now, sleep: async () => {}, after: () => () => {} };
let dbs: StateDb[] = [];
beforeEach(() => {
  t = tempDir();
  now = 1_000;
});
afterEach(() => {
  for (const d of dbs) d.close();
  dbs = [];
  t.cleanup();
});

// ---- the operations ----
const STOCKS: AttributeValue[] = [0, 3, '', '０', '12', -2, null, true, 'abc', 1.5];
/** A small pool of ids, so that changes meet records that exist, were deleted, are not owned or foreign-edited. */
const id = fc.integer({ min: 0, max: 24 }).map((i) => `r-${String(i).padStart(2, '0')}`);
const record = fc
  .record({ id, name: fc.constantFrom('A', 'B', ''), stock: fc.constantFrom(...STOCKS), price: fc.option(fc.constantFrom(0, 5, '7'), { nil: undefined }), active: fc.boolean() })
  .map(
    (r): DatasetRecord => ({
      record_id: r.id,
      display_name: r.name,
      api_value: r.id,
      aliases: r.name === 'B' ? ['b'] : [],
      attributes: { stock: r.stock, ...(r.price === undefined ? {} : { price: r.price }) },
      active: r.active,
    }),
  );
/** A run of many records (past SUSPEND_AFTER): a first sync, or a catalogue-wide change. */
const bulk = fc.record({ stockOf: fc.integer({ min: 0, max: 3 }), extra: fc.integer({ min: 0, max: 30 }) }).map(({ stockOf, extra }) =>
  Array.from({ length: SUSPEND_AFTER + extra }, (_, i): DatasetRecord => ({
    record_id: `b-${String(i).padStart(5, '0')}`,
    display_name: `Bulk ${i}`,
    api_value: `b${i}`,
    aliases: [],
    attributes: { stock: STOCKS[(i + stockOf) % STOCKS.length]! },
    active: true,
  })),
);
const op = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('confirm' as const),
      upserts: fc.array(record, { maxLength: 8 }),
      texts: fc.array(record, { maxLength: 8 }),
      deletes: fc.array(id, { maxLength: 4 }),
      own: fc.array(id, { maxLength: 3 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('bulk' as const), records: bulk, deleteAll: fc.boolean() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('server' as const), edits: fc.array(record, { maxLength: 4 }), drop: fc.array(id, { maxLength: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('adopt' as const), ids: fc.array(id, { maxLength: 5 }) }) },
  // Every record deleted: the next confirm is a first one again, over the history kept.
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('clear' as const) }) },
);
type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;

function apply(db: StateDb, s: SnapshotStore, o: Op, version: number): void {
  const texts = (rs: DatasetRecord[]) => rs.map((r, i) => ({ record_id: r.record_id, json: recordJson(r), line: i + 2 }));
  switch (o.kind) {
    case 'confirm':
      s.confirm({ activeVersion: version, upserts: o.upserts, upsertTexts: texts(o.texts), deletes: o.deletes, own: o.own, provenance: { kind: 'sync', planId: `p${version}`, file: 'x.csv' } });
      return;
    case 'bulk': {
      // Everything there deleted in the same change (a bulk past the suspension of deletes too), or kept beside.
      const there = o.deleteAll ? [...s.reader().entries()].map((e) => e.record_id).filter((x) => !o.records.some((r) => r.record_id === x)) : [];
      s.confirm({ activeVersion: version, upsertTexts: texts(o.records), deletes: there, provenance: { kind: 'sync', planId: `p${version}` } });
      return;
    }
    case 'server': {
      // Someone else edited, added and removed records on the server; a rebuild reads them (foreign fields, issue 7).
      const rb = s.beginRebuild();
      const edits = new Map(o.edits.map((r) => [r.record_id, r]));
      const kept = [...s.reader().entries()].filter((e) => !o.drop.includes(e.record_id)).map((e) => edits.get(e.record_id) ?? (JSON.parse(e.json) as DatasetRecord));
      for (const r of kept) edits.delete(r.record_id);
      rb.add([...kept, ...edits.values()]);
      rb.commit(version);
      return;
    }
    case 'adopt':
      s.adopt(o.ids);
      return;
    case 'clear':
      s.confirm({ activeVersion: version, deletes: [...s.reader().entries()].map((e) => e.record_id) });
      return;
  }
  void db;
}

/** Everything confirm writes of the dataset, as rows. */
function dump(db: StateDb) {
  const all = (sql: string) => db.conn.prepare(sql).all(DS);
  return {
    records: all('SELECT * FROM records WHERE dataset = ? ORDER BY record_id'),
    tallies: all('SELECT * FROM record_tallies WHERE dataset = ?'),
    bases: all('SELECT * FROM value_bases WHERE dataset = ? ORDER BY field'),
    versions: all('SELECT * FROM history_versions WHERE dataset = ? ORDER BY seq'),
    history: all('SELECT * FROM history_records WHERE dataset = ? ORDER BY record_id, first_seq'),
    state: all('SELECT * FROM datasets WHERE dataset = ?'),
    triggers: db.conn.prepare(`SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY name`).all(),
  };
}

describe('confirm, differential against the confirm before issue 18', () => {
  it('leaves the same state db after any sequence of confirms, bulk changes, server edits and adoptions', () => {
    let run = 0;
    fc.assert(
      fc.property(fc.array(op, { minLength: 1, maxLength: 7 }), (ops) => {
        run++;
        const mine = openStateDb(join(t.dir, `mine-${run}.db`), { clock });
        const ref = openStateDb(join(t.dir, `ref-${run}.db`), { clock });
        dbs.push(mine, ref);
        const a = mine.snapshot(DS);
        const b = new Reference(ref.conn, DS, clock);
        for (const [k, o] of ops.entries()) {
          now += 60_000;
          const before = [a.generation(), b.generation()];
          apply(mine, a, o, k + 1);
          apply(ref, b, o, k + 1);
          expect(dump(mine)).toEqual(dump(ref));
          // Values differ (the reference bumps once a row): the generation moves in both, or in neither.
          expect(a.generation() > before[0]!, `generation after ${o.kind}`).toBe(b.generation() > before[1]!);
        }
        // The answers built on those rows: why of every id, restore's state at every kept seq.
        // (of the bulk records, the first, one between and the last: they were written alike)
        const ids = [...new Set((dump(ref).history as Array<{ record_id: string }>).map((h) => h.record_id))].filter((x) => !x.startsWith('b-') || /^b-(00000|00500|01000)$/.test(x));
        for (const x of ids) expect(why(mine.conn, DS, x)).toEqual(why(ref.conn, DS, x));
        const seqs = (ref.conn.prepare('SELECT seq FROM history_versions WHERE dataset = ?').pluck().all(DS) as number[]);
        for (const seq of seqs) expect([...new HistoryReader(mine.conn, DS).stateAt(seq)]).toEqual([...new HistoryReader(ref.conn, DS).stateAt(seq)]);
        mine.close();
        ref.close();
        dbs = [];
      }),
      { numRuns: 30 },
    );
  }, 120_000);

  it('a first confirm with an id twice, and a first confirm after every record was deleted (history kept), match too', () => {
    const mine = openStateDb(join(t.dir, 'mine.db'), { clock });
    const ref = openStateDb(join(t.dir, 'ref.db'), { clock });
    dbs.push(mine, ref);
    const a = mine.snapshot(DS);
    const b = new Reference(ref.conn, DS, clock);
    const r = (x: string, stock: AttributeValue) => ({ record_id: x, display_name: x, api_value: x, aliases: [], attributes: { stock }, active: true });
    const steps: ConfirmedChange[] = [
      { activeVersion: 1, upserts: [r('a', 1), r('b', 2)], upsertTexts: [{ record_id: 'a', json: recordJson(r('a', 5)), line: 3 }, { record_id: 'c', json: recordJson(r('c', 0)), line: 4 }] },
      { activeVersion: 2, deletes: ['a', 'b', 'c'] },
      { activeVersion: 3, upsertTexts: [{ record_id: 'b', json: recordJson(r('b', 9)), line: 2 }, { record_id: 'd', json: recordJson(r('d', 1)), line: 3 }] },
    ];
    for (const c of steps) {
      now += 1000;
      a.confirm(c);
      b.confirm(c);
      expect(dump(mine)).toEqual(dump(ref));
    }
    expect(why(mine.conn, DS, 'b').fields.find((f) => f.field === 'attributes.stock')?.set?.line).toBe(2);
  });
});
