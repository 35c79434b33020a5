import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { datasetConfigSchema, type DatasetConfig } from '../../src/config/schema.js';
import { policySchema } from '../../src/config/policy.js';
import { FeedState } from '../../src/feeds/state.js';
import { feedView, readerMapping } from '../../src/feeds/view.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import type { Changeset } from '../../src/sync/core/changeset.js';
import { replaceRecords } from '../../src/sync/core/ownership.js';
import { planSync } from '../../src/sync/core/plan.js';
import { desiredOf, diffDesired, diffsAsRead, planFeedOf, type Desired } from '../../src/sync/executor/feed-desired.js';
import type { MergePath } from '../../src/sync/executor/feed-indexed.js';
import { planSource, readSource } from '../../src/sync/executor/source-read.js';
import type { ExecContext } from '../../src/sync/executor/context.js';
import { systemClock } from '../../src/clock.js';
import { recs, type Scenario } from '../sync/harness.js';
import { feedScenario, writeStockFile } from './helpers.js';

/**
 * Issue 13: a feed file that leaves what it does not list is merged and
 * diffed by index (only the records it lists are read from the snapshot);
 * the plan must be the one the full merge-join makes. Both paths run on the
 * same state database and file, across roles, ownership, hand-made (not
 * owned) and foreign-edited records, precedence, blank cells and
 * empty_clears, unmatched ids and repeated rows, and everything they give
 * is compared: the feed's counts and rows, the state it records, the
 * changeset (counts, digest, value tallies, every operation), the replace
 * body and the plan.
 */

const DATASET = 'shop-1';
const T0 = Date.UTC(2026, 0, 5, 9, 0, 0);
const N = 40;
const id = (i: number) => `r-${String(i).padStart(3, '0')}`;
const stockAt = (i: number) => (i % 7 === 0 ? 0 : i % 7);
const record = (i: number, over: Partial<DatasetRecord> = {}): DatasetRecord => ({
  record_id: id(i),
  display_name: `Item ${i}`,
  api_value: `code-${i}`,
  aliases: i % 5 === 0 ? [`alias-${i}`] : [],
  attributes: { stock: stockAt(i), ...(i % 3 === 0 ? { color: 'red' } : {}), ...(i % 4 === 0 ? { price: `${i}.50` } : {}) },
  active: true,
  ...over,
});

/** Records 1..34 owned (published by the connector), 35..40 made by hand (not owned); 3 and 20 edited in the portal since. */
function seedSnapshot(db: StateDb): void {
  const store = db.snapshot(DATASET);
  const all = Array.from({ length: N }, (_, k) => record(k + 1));
  const rb = store.beginRebuild();
  rb.add(all);
  rb.commit(1);
  store.confirm({ activeVersion: 2, upserts: all.slice(0, 34) });
  const edited = all.map((r) => (r.record_id === id(3) ? { ...r, display_name: 'Hand edit' } : r.record_id === id(20) ? { ...r, api_value: 'code-hand' } : r));
  const rb2 = store.beginRebuild();
  rb2.add(edited);
  rb2.commit(3);
  // The catalogue's published stock values (it maps stock too: precedence decides), older than the files below.
  new FeedState(db.conn, DATASET).published(
    { feed: 'main', file: 'cat.csv', sha256: null, at: T0 },
    Array.from({ length: 34 }, (_, k) => ({ record_id: id(k + 1), line: k + 2, values: { 'attributes.stock': stockAt(k + 1) } })),
    T0,
    false,
  );
  new FeedState(db.conn, DATASET).published({ feed: 'stock', file: 'old.csv', sha256: null, at: T0 + 1 }, [{ record_id: id(2), line: 2, values: { 'attributes.stock': 9 } }], T0 + 1, false);
}

const CATALOGUE = { source: { type: 'csv' }, mapping: { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'Code', 'attributes.stock': { column: 'Stock', transforms: ['integer'] } } } };
const STOCK = { role: 'update', source: { type: 'csv', on_row_errors: 'skip_rows', max_bad_row_ratio: 0.5 }, mapping: { fields: { record_id: 'SKU', 'attributes.stock': { column: 'Qty', transforms: ['integer'] } } } };
const CHANGES = {
  role: 'changes',
  source: { type: 'csv', on_row_errors: 'skip_rows', max_bad_row_ratio: 0.5 },
  mapping: { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'Code', 'attributes.stock': { column: 'Qty', transforms: ['integer'] } } },
  commands: { column: 'Op' },
};

interface Case {
  role: 'update' | 'changes';
  ownership: 'source' | 'full';
  precedence: 'newest' | 'stock' | 'main';
  /** empty_clears of the stock field, and on_foreign_edit: keep (else overwrite). */
  clears: boolean;
}

function datasetOf(c: Case): DatasetConfig {
  const feed = c.role === 'update' ? STOCK : CHANGES;
  const name = c.role === 'update' ? 'stock' : 'changes';
  const policy = policySchema.parse({ ownership: c.ownership, on_foreign_edit: c.clears ? 'keep' : 'overwrite' });
  const parsed = datasetConfigSchema.parse({
    api: { base_url: 'http://127.0.0.1:9', key: { env: 'UNUSED' } },
    feeds: { main: CATALOGUE, [name]: { ...feed, ...(c.clears ? { empty_clears: ['attributes.stock'] } : {}) } },
    precedence: { 'attributes.stock': c.precedence === 'stock' ? name : c.precedence },
  });
  const ds = { ...parsed, name: DATASET, file: 'test.yaml', api: { ...parsed.api, dataset_id: DATASET }, policy } as DatasetConfig;
  return feedView(ds, name);
}

/** The update feed's file: changed, zeroed, blank, unchanged, not owned, foreign-edited, unmatched and repeated rows. */
const STOCK_ROWS = ['SKU,Qty', `${id(2)},5`, `${id(3)},8`, `${id(5)},`, `${id(7)},0`, `${id(12)},${stockAt(12)}`, `${id(36)},4`, 'r-099,1', `${id(10)},11`, `${id(10)},12`, `${id(20)},2`, `${id(14)},3`, `${id(1)},0`];
/** The change list: every command, an existing record created, an unknown id and word, a repeated row. */
const CHANGE_ROWS = [
  'SKU,Name,Code,Qty,Op',
  'r-050,New 50,code-50,5,create',
  `${id(1)},Again,code-1,1,create`,
  'r-051,New 51,code-51,,upsert',
  `${id(4)},Item 4,code-4,44,upsert`,
  `${id(6)},Renamed 6,code-6,,update`,
  'r-098,Nope,code-98,1,update',
  `${id(8)},,,,delete`,
  `${id(37)},,,,delete`,
  `${id(38)},Hand 38,code-38,3,update`,
  `${id(9)},Item 9,code-9,99,ignore`,
  `${id(11)},Item 11,code-11,1,bogus`,
  `${id(13)},Item 13,code-13,7,update`,
  `${id(13)},Item 13,code-13,8,update`,
  `${id(3)},Item 3,code-3,30,update`,
];

let dir: string;
let db: StateDb;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'dc-indexed-'));
  db = openStateDb(join(dir, 'state.db'), { clock: systemClock });
  seedSnapshot(db);
  await writeFile(join(dir, 'stock.csv'), `${STOCK_ROWS.join('\n')}\n`);
  await writeFile(join(dir, 'changes.csv'), `${CHANGE_ROWS.join('\n')}\n`);
});
afterAll(async () => {
  db.close();
  await rm(dir, { recursive: true, force: true });
});

/**
 * Everything one path gives for a file, in plain values. `onDisk`: every sort goes through runs on disk and the
 * snapshot records an indexed merge read are kept in a file (as for a file too large to keep in memory).
 */
async function run(ds: DatasetConfig, file: string, path: MergePath, tag: string, onDisk = false) {
  const work = join(dir, tag);
  mkdirSync(work, { recursive: true });
  const store = db.snapshot(DATASET);
  const ctx = { store, policy: ds.policy, db, dataset: DATASET } as unknown as ExecContext;
  // As run-sync reads a feed's file (no value flags: the merged records are diffed).
  const src = { ...(await readSource(file, ds.source, readerMapping(ds), work, { valueFlags: diffsAsRead(ds), ...(onDisk ? { runBytes: 1 } : {}) })), valuesAt: T0 + 100 };
  expect(src.sorted!.runs.length > 0).toBe(onDisk);
  expect([...src.sorted!.entries()].filter((e) => e.flags !== undefined)).toEqual([]);
  // The reader's row errors (repeated ids are found by the sort) and its reject file, written beside the export by each run.
  const read = { rowErrors: src.rowErrors, records: src.records, rejectFile: src.rejectFile && (await readFile(src.rejectFile, 'utf8')) };
  const desired: Desired = onDisk ? desiredOf(ctx, ds, src, join(work, 'merged'), path, 0) : desiredOf(ctx, ds, src, join(work, 'merged'), path);
  expect(desired.sorted.runs.length > 0).toBe(onDisk);
  if (desired.listed) expect(desired.listed.kept ? 'memory' : 'file').toBe(onDisk ? 'file' : 'memory');
  const cs: Changeset = await diffDesired(ctx, desired, join(work, 'changeset'));
  const plan = planSync({
    dataset: DATASET,
    changeset: cs,
    snapshot: { ...store.state(), lastSource: null },
    key: { roles: ['read', 'write', 'replace', 'publish'], shown: { records: 'stages', jobs: 'stages' } },
    policy: ds.policy,
    rateBudget: { ratePerMinute: 120 },
    source: planSource(src),
    planDir: work,
    now: T0 + 1000,
    feed: planFeedOf(ds, src, desired.feed)!,
  });
  const { listed, folder, records, adds, addTexts, changes, deletes, adopted, ...summary } = cs;
  return {
    read,
    indexed: listed !== undefined,
    feed: desired.feed,
    unmatched: desired.unmatched,
    rowErrors: desired.rowErrors,
    state: desired.stateFile && existsSync(desired.stateFile) ? await readFile(desired.stateFile, 'utf8') : null,
    summary,
    adds: [...adds],
    addTexts: [...addTexts],
    changes: [...changes],
    deletes: [...deletes],
    adopted: [...adopted],
    replace: [...replaceRecords(cs, store.reader())],
    plan,
  };
}

const cases: Case[] = [];
for (const role of ['update', 'changes'] as const)
  for (const ownership of ['source', 'full'] as const)
    for (const precedence of ['newest', 'stock', 'main'] as const) for (const clears of [false, true]) cases.push({ role, ownership, precedence, clears });

describe('indexed merge and diff = the full merge-join', () => {
  for (const c of cases) {
    it(`${c.role}, ownership ${c.ownership}, precedence ${c.precedence}${c.clears ? ', empty_clears, on_foreign_edit keep' : ''}`, async () => {
      const ds = datasetOf(c);
      const file = join(dir, c.role === 'update' ? 'stock.csv' : 'changes.csv');
      const tag = `${c.role}-${c.ownership}-${c.precedence}-${c.clears}`;
      const full = await run(ds, file, 'full', `${tag}-full`);
      const indexed = await run(ds, file, 'indexed', `${tag}-indexed`);
      expect(full.indexed).toBe(false);
      expect(indexed.indexed).toBe(true);
      // The inputs do what they are for (else equality proves little).
      // (An update feed's only field goes to the catalogue under precedence main: nothing changes there but adoptions.)
      const changes = c.role === 'changes' || c.precedence !== 'main';
      if (changes) expect(full.summary.counts.changes).toBeGreaterThan(0);
      expect(full.feed!.unmatched).toBeGreaterThan(0);
      expect(full.replace.length).toBe(full.summary.counts.result);
      if (c.ownership === 'full') expect(full.adopted.length).toBeGreaterThan(0);
      else expect(full.summary.counts.notOwned).toBeGreaterThan(0);
      if (changes) expect(Object.keys(full.summary.values?.fields ?? {})).not.toEqual([]);
      expect(full.read.rowErrors.map((e) => e.code)).toContain('DUPLICATE_KEY');
      expect(full.read.rejectFile).toContain(id(c.role === 'update' ? 10 : 13));
      expect({ ...indexed, indexed: null }).toEqual({ ...full, indexed: null });
      // Sorted and kept in memory (a small file, as here) or on disk (a large one): the same plan, rows, state and changeset.
      expect(await run(ds, file, 'indexed', `${tag}-indexed-disk`, true)).toEqual(indexed);
      expect(await run(ds, file, 'full', `${tag}-full-disk`, true)).toEqual(full);
    });
  }

  it('a snapshot that keeps no tallies (counted by a scan instead) gives the same', async () => {
    const ds = datasetOf({ role: 'update', ownership: 'source', precedence: 'newest', clears: false });
    const file = join(dir, 'stock.csv');
    const kept = await run(ds, file, 'indexed', 'untallied-kept');
    expect(db.snapshot(DATASET).tallies()).not.toBeNull();
    const tallies = db.conn.prepare('SELECT * FROM record_tallies WHERE dataset = ?').get(DATASET);
    const bases = db.conn.prepare('SELECT * FROM value_bases WHERE dataset = ?').all(DATASET);
    db.conn.prepare('DELETE FROM record_tallies WHERE dataset = ?').run(DATASET);
    db.conn.prepare('DELETE FROM value_bases WHERE dataset = ?').run(DATASET);
    try {
      expect(db.snapshot(DATASET).tallies()).toBeNull();
      const scanned = await run(ds, file, 'indexed', 'untallied-scan');
      expect(scanned.indexed).toBe(true);
      expect(Object.keys(scanned.summary.values?.fields ?? {})).not.toEqual([]);
      expect(scanned).toEqual(kept);
    } finally {
      db.conn.prepare('INSERT INTO record_tallies (dataset, records, owned) VALUES (@dataset, @records, @owned)').run(tallies);
      for (const b of bases) db.conn.prepare('INSERT INTO value_bases (dataset, field, zeroable, nonzero) VALUES (@dataset, @field, @zeroable, @nonzero)').run(b);
    }
  });

  it('the comparison sees a difference: a snapshot record changed between the two runs changes the plan', async () => {
    const ds = datasetOf({ role: 'update', ownership: 'source', precedence: 'newest', clears: false });
    const file = join(dir, 'stock.csv');
    const before = await run(ds, file, 'indexed', 'sense-before');
    // A record the file does not list: only the counts and bases carry it into the indexed plan.
    const store = db.snapshot(DATASET);
    const was = store.get(id(30))!.record;
    store.confirm({ activeVersion: 4, upserts: [{ ...was, attributes: { ...was.attributes, stock: 0 } }] });
    try {
      const after = await run(ds, file, 'indexed', 'sense-after');
      expect(after.summary.values).not.toEqual(before.summary.values);
    } finally {
      store.confirm({ activeVersion: 5, upserts: [was] });
    }
  });
});

describe('a sync picks the indexed merge by the listed share, and publishes the merged state', () => {
  const planned = (sc: Scenario) => sc.logs.filter((l) => l.event === 'sync.planned').map((l) => ({ merge: l.merge, path: l.path }));
  const expected = (stock: Record<string, number>) => recs(10).map((r) => ({ ...r, attributes: stock[r.record_id] === undefined ? {} : { stock: stock[r.record_id] } }));

  for (const replace of [true, false]) {
    it(`${replace ? 'replace (the others streamed from the snapshot)' : 'per-record writes'}`, async () => {
      const { sc, ds } = await feedScenario(recs(10), { policy: { ...(replace ? { replace: { max_per_record_changes: 0, prefer_import: false } } : {}), guards: { values: [] } } });
      try {
        const stock = feedView(ds, 'stock');
        const all = Object.fromEntries(recs(10).map((r, i) => [r.record_id, i + 1]));
        // Every record listed: above the share, the full merge-join.
        expect((await sc.engine.sync(stock, { file: await writeStockFile(sc, all, 'stock-1.csv') })).result).toBe('published');
        // Two of ten: by index.
        const few = { 'r-002': 70, 'r-009': 0 };
        const s = await sc.engine.sync(stock, { file: await writeStockFile(sc, few, 'stock-2.csv') });
        expect(s.result).toBe('published');
        expect(s.changes).toBe(2);
        expect(planned(sc).slice(-2)).toEqual([
          { merge: 'full', path: replace ? 'replace' : 'per_record' },
          { merge: 'indexed', path: replace ? 'replace' : 'per_record' },
        ]);
        expect(sc.published().map(({ record_id, attributes }) => ({ record_id, attributes }))).toEqual(
          expected({ ...all, ...few }).map(({ record_id, attributes }) => ({ record_id, attributes })),
        );
        // The same file again: nothing to send.
        expect((await sc.engine.sync(stock, { file: await writeStockFile(sc, few, 'stock-3.csv') })).result).toBe('unchanged');
      } finally {
        await sc.close();
      }
    });
  }
});
