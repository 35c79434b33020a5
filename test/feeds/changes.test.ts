import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rejectFilePath } from '../../src/sources/reject-file.js';
import { rec, scenario, type Scenario } from '../sync/harness.js';
import { CATALOGUE, stockOf, withFeeds, writeFileAt } from './helpers.js';

/** Issue 13: a change list (role changes) with a command column, against the emulator over real HTTP. */

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
});

const CHANGES = {
  role: 'changes',
  source: { type: 'csv' },
  mapping: { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'Code', 'attributes.stock': { column: 'Qty', transforms: ['integer'] } } },
  commands: { column: 'Op' },
};

async function changeList(s: Scenario, rows: Array<[string, string, number, string]>, name: string): Promise<string> {
  const file = join(s.dir, name);
  await writeFile(file, ['SKU,Name,Code,Qty,Op', ...rows.map(([id, n, q, op]) => `${id},${n},code-${id},${q},${op}`)].join('\n') + '\n');
  return file;
}

describe('change list: a command per row', () => {
  it('create, update, upsert (both ways), delete, ignore, an unknown id and an unknown word (INVALID_COMMAND naming line, column, word and the accepted words)', async () => {
    sc = await scenario({ manualClock: true, records: [rec('h-001', 'Hand made')] });
    // skip_rows: the rows that can be applied are, the one with an unknown word is left out (the next test: reject_file).
    const ds = withFeeds(sc, { changes: { ...CHANGES, source: { type: 'csv', on_row_errors: 'skip_rows', max_bad_row_ratio: 0.2 } } });
    const ids = Array.from({ length: 10 }, (_, i) => `r-${String(i + 1).padStart(3, '0')}`);
    const first = await sc.engine.sync(ds, { file: await changeList(sc, ids.map((id) => [id, `Item ${id}`, 1, 'add']), 'changes-1.csv') });
    expect(first).toMatchObject({ result: 'published', adds: 10, deletes: 0 });
    const file = await changeList(
      sc,
      [
        ['r-001', 'Item r-001', 5, 'UPDATE'],
        ['r-002', 'Item r-002', 0, 'delete'],
        ['r-003', 'Other name', 9, 'skip'],
        ['r-004', 'Item r-004', 7, 'Upsert'],
        ['r-005', 'Item r-005', 3, 'frobnicate'],
        ['r-011', 'New one', 2, 'upsert'],
        ['r-099', 'Nobody', 1, 'modify'],
        ['h-001', 'Hand made', 0, 'remove'],
      ],
      'changes-2.csv',
    );
    const sum = await sc.engine.sync(ds, { file });
    expect(sum).toMatchObject({ result: 'published', adds: 1, changes: 2, deletes: 1, rowErrors: 1 });
    expect(sum.feed).toMatchObject({ name: 'changes', role: 'changes', matched: 3, unmatched: 1, firstUnmatched: ['r-099'], notOwned: 1 });
    const stock = stockOf(sc);
    expect(stock).toMatchObject({ 'r-001': 5, 'r-003': 1, 'r-004': 7, 'r-005': 1, 'r-011': 2 });
    expect('r-002' in stock).toBe(false);
    expect(sc.published().find((r) => r.record_id === 'r-003')!.display_name).toBe('Item r-003');
    expect(sc.published().find((r) => r.record_id === 'h-001')).toEqual(rec('h-001', 'Hand made'));
    const rejects = await readFile(rejectFilePath(file), 'utf8');
    expect(rejects).toContain(
      '6,command,frobnicate,INVALID_COMMAND,"line 6, column Op: ""frobnicate"" is not a command (accepted words: create: create, add, new; upsert: upsert; update: update, change, modify; delete: delete, remove, del; ignore: ignore, skip)"',
    );
    expect(rejects).toContain('8,record_id,r-099,UNMATCHED_RECORD,no record r-099 in the dataset: update changes only records that exist (use upsert or create to make one)');
  });

  it('create only creates: a row creating a record that exists is counted and listed (RECORD_EXISTS), not applied', async () => {
    sc = await scenario({ manualClock: true });
    const ds = withFeeds(sc, { changes: CHANGES });
    expect((await sc.engine.sync(ds, { file: await changeList(sc, [['r-001', 'Tea', 1, 'create']], 'changes-1.csv') })).result).toBe('published');
    const file = await changeList(
      sc,
      [
        ['r-001', 'Other tea', 9, 'create'],
        ['r-002', 'Coffee', 2, 'new'],
      ],
      'changes-2.csv',
    );
    const sum = await sc.engine.sync(ds, { file });
    expect(sum).toMatchObject({ result: 'published', adds: 1, changes: 0, rowErrors: 0 });
    expect(sum.feed).toMatchObject({ matched: 0, unmatched: 1, firstUnmatched: ['r-001'] });
    expect(sc.published().find((r) => r.record_id === 'r-001')).toMatchObject({ display_name: 'Tea', attributes: { stock: 1 } });
    expect(await readFile(rejectFilePath(file), 'utf8')).toContain(
      '2,record_id,r-001,RECORD_EXISTS,record r-001 exists already: create only makes new records (use upsert or update to change it)',
    );
  });

  it('under on_row_errors: reject_file (the default) an unknown command word refuses the whole list: nothing of it is published, plan says so too', async () => {
    sc = await scenario({ manualClock: true });
    const ds = withFeeds(sc, { changes: CHANGES });
    const ids = Array.from({ length: 5 }, (_, i) => `r-${String(i + 1).padStart(3, '0')}`);
    expect(await sc.engine.sync(ds, { file: await changeList(sc, ids.map((id) => [id, `Item ${id}`, 1, 'add']), 'changes-1.csv') })).toMatchObject({ result: 'published', adds: 5 });
    const before = sc.published();
    const file = await changeList(
      sc,
      [
        ['r-001', 'Item r-001', 5, 'update'],
        ['r-002', 'Item r-002', 0, 'delete'],
        ['r-006', 'New one', 2, 'create'],
        ['r-003', 'Item r-003', 3, 'frobnicate'],
      ],
      'changes-2.csv',
    );
    const planned = await sc.engine.plan(ds, file);
    expect(planned).toMatchObject({ rejectedCode: 'ROW_ERRORS', plan: null });
    const sum = await sc.engine.sync(ds, { file });
    expect(sum).toMatchObject({ result: 'rejected', code: 'ROW_ERRORS', rowErrors: 1 });
    expect(sc.published()).toEqual(before);
    expect(await readFile(rejectFilePath(file), 'utf8')).toContain('5,command,frobnicate,INVALID_COMMAND');
  });

  it('deletes are guarded like a full export\'s: past max_delete_ratio the change is held', async () => {
    sc = await scenario({ manualClock: true });
    const ds = withFeeds(sc, { changes: CHANGES });
    const ids = Array.from({ length: 10 }, (_, i) => `r-${String(i + 1).padStart(3, '0')}`);
    expect((await sc.engine.sync(ds, { file: await changeList(sc, ids.map((id) => [id, `Item ${id}`, 1, 'new']), 'c-1.csv') })).result).toBe('published');
    const sum = await sc.engine.sync(ds, { file: await changeList(sc, ids.slice(0, 5).map((id) => [id, `Item ${id}`, 1, 'del']), 'c-2.csv') });
    expect(sum).toMatchObject({ result: 'held', code: 'HELD_GUARD', deletes: 5 });
    expect(sc.published()).toHaveLength(10);
  });
  // Review of #13 (rv13): a change list that maps display_name/api_value (it must, to create) refuses every
  // update and delete row whose Name/Code cells are empty ("display_name must not be empty"), so a typical
  // change list (delete rows carry only the id) is rejected whole. An update row's empty cell should be "no
  // value" as in an update feed, and a delete/ignore row needs nothing but its id. Fails until then.
  it('update and delete rows need only the id: empty Name/Code cells of a change list that maps them are no value', async () => {
    sc = await scenario({ manualClock: true });
    const ds = withFeeds(sc, { changes: CHANGES });
    const ids = Array.from({ length: 10 }, (_, i) => `r-${String(i + 1).padStart(3, '0')}`);
    expect((await sc.engine.sync(ds, { file: await changeList(sc, ids.map((id) => [id, `Item ${id}`, 1, 'new']), 'c-1.csv') })).result).toBe('published');
    const file = join(sc.dir, 'c-2.csv');
    await writeFile(file, 'SKU,Name,Code,Qty,Op\nr-001,,,5,update\nr-002,,,,delete\nr-003,,,,ignore\n');
    const sum = await sc.engine.sync(ds, { file });
    expect(sum).toMatchObject({ result: 'published', rowErrors: 0, changes: 1, deletes: 1 });
    expect(sc.published().find((r) => r.record_id === 'r-001')).toMatchObject({ display_name: 'Item r-001', attributes: { stock: 5 } });
    expect(sc.published().find((r) => r.record_id === 'r-002')).toBeUndefined();
  });
  // Review of #13 (rv13): command words are checked only when no other row has an error, so a list with a bad
  // value on one row and an unknown word on another lists only the first in its reject file, though the summary
  // says "every row error is in …rejected.csv": the person fixes one row, and the re-export is refused again.
  it('the reject file lists every row error: an unknown command word beside a row with a bad value', async () => {
    sc = await scenario({ manualClock: true });
    const ds = withFeeds(sc, { changes: CHANGES });
    const file = join(sc.dir, 'c-1.csv');
    await writeFile(file, 'SKU,Name,Code,Qty,Op\nr-001,Tea,c1,x,create\nr-002,Coffee,c2,2,frobnicate\n');
    const sum = await sc.engine.sync(ds, { file });
    expect(sum).toMatchObject({ result: 'rejected', code: 'ROW_ERRORS', rowErrors: 2 });
    const rejects = await readFile(rejectFilePath(file), 'utf8');
    expect(rejects).toContain('TRANSFORM_FAILED');
    expect(rejects).toContain('3,command,frobnicate,INVALID_COMMAND');
  });
  it('every row error of a change list, whatever else is wrong in it, is in the reject file, the count and the first errors of plan and sync', async () => {
    sc = await scenario({ manualClock: true });
    const ds = withFeeds(sc, { changes: CHANGES });
    const file = join(sc.dir, 'mix.csv');
    await writeFile(file, 'SKU,Name,Code,Qty,Op\nr-001,,c1,1,create\nr-002,Coffee,c2,2,wipe\nr-003,Tea,c3,x,update\n');
    const planned = await sc.engine.plan(ds, file);
    expect(planned).toMatchObject({ rejectedCode: 'ROW_ERRORS', rowErrors: 3 });
    expect(planned.firstRowErrors!.map((e) => [e.line, e.code])).toEqual([[2, 'INVALID_RECORD'], [3, 'INVALID_COMMAND'], [4, 'TRANSFORM_FAILED']]);
    const sum = await sc.engine.sync(ds, { file });
    expect(sum).toMatchObject({ result: 'rejected', code: 'ROW_ERRORS', rowErrors: 3 });
    expect(sum.firstRowErrors!.map((e) => e.line)).toEqual([2, 3, 4]);
    const rejects = await readFile(rejectFilePath(file), 'utf8');
    expect(rejects).toContain('2,record,create,INVALID_RECORD');
    expect(rejects).toContain('3,command,wipe,INVALID_COMMAND');
    expect(rejects).toContain('4,Qty,x,TRANSFORM_FAILED');
  });
  // Review of #13: an upsert without the fields of a record that does not exist was found only by the merge, which a
  // file refused for another row never reaches: it was missing from the reject file and from firstRowErrors.
  it('a file refused for another row: an upsert that would create without its fields is in the reject file and the first errors of plan and sync', async () => {
    sc = await scenario({ manualClock: true });
    const ds = withFeeds(sc, { changes: CHANGES });
    expect((await sc.engine.sync(ds, { file: await changeList(sc, [['r-001', 'Tea', 1, 'create']], 'c-1.csv') })).result).toBe('published');
    const file = join(sc.dir, 'c-2.csv');
    // Line 2: an upsert of r-001 (there) leaves its empty cells; line 3: one of r-099 (not there) needs them; line 4: a bad value.
    await writeFile(file, 'SKU,Name,Code,Qty,Op\nr-001,,,5,upsert\nr-099,,,3,upsert\nr-003,Tea,c3,x,update\n');
    const planned = await sc.engine.plan(ds, file);
    expect(planned).toMatchObject({ rejectedCode: 'ROW_ERRORS', rowErrors: 2 });
    expect(planned.firstRowErrors!.map((e) => [e.line, e.code])).toEqual([[3, 'INVALID_RECORD'], [4, 'TRANSFORM_FAILED']]);
    const sum = await sc.engine.sync(ds, { file });
    expect(sum).toMatchObject({ result: 'rejected', code: 'ROW_ERRORS', rowErrors: 2 });
    expect(sum.firstRowErrors!.map((e) => [e.line, e.code])).toEqual([[3, 'INVALID_RECORD'], [4, 'TRANSFORM_FAILED']]);
    const rejects = await readFile(rejectFilePath(file), 'utf8');
    expect(rejects).toContain('3,record,upsert,INVALID_RECORD');
    expect(rejects).toContain('4,Qty,x,TRANSFORM_FAILED');
    expect(rejects).not.toContain('r-001');
    expect(sc.published().find((r) => r.record_id === 'r-001')).toMatchObject({ attributes: { stock: 1 } });
  });
  it('a delete row needs only its id (a bad value beside it is no error); an upsert of a record that exists leaves its empty cells, of one that does not needs the fields', async () => {
    sc = await scenario({ manualClock: true });
    const ds = withFeeds(sc, { changes: { ...CHANGES, source: { type: 'csv', on_row_errors: 'skip_rows', max_bad_row_ratio: 0.5 } } });
    const ids = Array.from({ length: 10 }, (_, i) => `r-${String(i + 1).padStart(3, '0')}`);
    expect((await sc.engine.sync(ds, { file: await changeList(sc, ids.map((id) => [id, `Item ${id}`, 1, 'new']), 'c-1.csv') })).result).toBe('published');
    const file = join(sc.dir, 'c-2.csv');
    await writeFile(file, 'SKU,Name,Code,Qty,Op\nr-001,,,7,upsert\nr-002,,,x,delete\nr-099,,,3,upsert\n');
    const sum = await sc.engine.sync(ds, { file });
    expect(sum).toMatchObject({ result: 'published', rowErrors: 1, changes: 1, deletes: 1, adds: 0 });
    expect(sc.published().find((r) => r.record_id === 'r-001')).toMatchObject({ display_name: 'Item r-001', attributes: { stock: 7 } });
    expect(sc.published().find((r) => r.record_id === 'r-002')).toBeUndefined();
    expect(await readFile(rejectFilePath(file), 'utf8')).toContain('4,record,upsert,INVALID_RECORD');
  });

  // Review of #13 (rv13b, D1): in a plan of several files (the daemon's coalescing: a catalogue and a change list
  // arriving together) an upsert creating a record without its fields was judged only by the merge, which a list
  // refused for another row never reaches: the reject file and the count left it out. The reader now asks the
  // snapshot and the plan's files read before it (the full feed's first).
  it('a coalesced plan: a change list refused for a bad value also lists its upsert that would create without the fields', async () => {
    sc = await scenario({ manualClock: true });
    const ds = withFeeds(sc, { main: CATALOGUE, changes: CHANGES }, { precedence: { display_name: 'newest', api_value: 'newest' } });
    expect((await sc.engine.sync(ds, { file: await sc.writeExport([rec('r-001', 'Tea'), rec('r-002', 'Coffee')], 'cat-0.csv') })).result).toBe('published');
    const cat = await writeFileAt(sc, 'cat-1.csv', ['SKU,Name,Code', 'r-001,Tea,code-r-001', 'r-002,Coffee,code-r-002'], 10);
    // Line 2: an update of r-001 (fine); line 3: an upsert of r-077 (not there) without Name/Code; line 4: a bad value.
    const list = await writeFileAt(sc, 'changes-1.csv', ['SKU,Name,Code,Qty,Op', 'r-001,,,9,update', 'r-077,,,7,upsert', 'r-002,,,x,update'], 20);
    const sum = await sc.engine.syncFeedFiles(ds, [
      { feed: 'main', file: cat },
      { feed: 'changes', file: list },
    ]);
    expect(sum.files?.[1]).toMatchObject({ feed: 'changes', outcome: 'rejected', code: 'ROW_ERRORS' });
    const rejects = await readFile(rejectFilePath(list), 'utf8');
    expect(rejects).toContain('4,Qty,x,TRANSFORM_FAILED');
    expect(rejects).toContain('3,record,upsert,INVALID_RECORD');
    expect(sum.files?.[1]?.message).toContain('2 of 3 rows have errors');
  });

  it('a coalesced plan: an upsert without the fields of a record the catalogue of the same plan brings is no row error, and is applied', async () => {
    sc = await scenario({ manualClock: true });
    const ds = withFeeds(sc, { main: CATALOGUE, changes: CHANGES }, { precedence: { display_name: 'newest', api_value: 'newest' } });
    expect((await sc.engine.sync(ds, { file: await sc.writeExport([rec('r-001', 'Tea')], 'cat-0.csv') })).result).toBe('published');
    // The change list comes first in the plan's order: the catalogue is still the merge's base (read first).
    const list = await writeFileAt(sc, 'changes-1.csv', ['SKU,Name,Code,Qty,Op', 'r-077,,,7,upsert'], 20);
    const cat = await writeFileAt(sc, 'cat-1.csv', ['SKU,Name,Code', 'r-001,Tea,code-r-001', 'r-077,Milk,code-r-077'], 10);
    const sum = await sc.engine.syncFeedFiles(ds, [
      { feed: 'changes', file: list },
      { feed: 'main', file: cat },
    ]);
    expect(sum.files?.[0]).toMatchObject({ feed: 'changes', outcome: 'planned' });
    expect(sum.result).toBe('published');
    expect(stockOf(sc)).toMatchObject({ 'r-077': 7 });
  });

  // Review of #13 (rv13b, D2): a create or upsert row with an empty record_id cell is checked for its fields before
  // its id, so the reject file says it "needs display_name and api_value" (its Name is there) instead of naming the
  // empty SKU, as an update or delete row with an empty id does; with api_value mapped elsewhere it is fine.
  it('a create row with an empty record_id is refused for its record_id (the SKU column), not for display_name and api_value', async () => {
    sc = await scenario({ manualClock: true });
    const list = { ...CHANGES, mapping: { fields: { ...CHANGES.mapping.fields, api_value: 'SKU' } } };
    const ds = withFeeds(sc, { changes: list });
    const file = join(sc.dir, 'c-1.csv');
    await writeFile(file, 'SKU,Name,Code,Qty,Op\n,Tea,c1,1,create\n,Coffee,c2,2,update\n');
    const sum = await sc.engine.sync(ds, { file });
    expect(sum).toMatchObject({ result: 'rejected', code: 'ROW_ERRORS', rowErrors: 2 });
    const rejects = await readFile(rejectFilePath(file), 'utf8');
    expect(rejects).toContain('3,SKU,,INVALID_RECORD,record_id must be');
    expect(rejects).toContain('2,SKU,,INVALID_RECORD,record_id must be');
  });
});
