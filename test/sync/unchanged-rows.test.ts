import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { policySchema } from '../../src/config/policy.js';
import { mappingConfigSchema } from '../../src/mapping/config.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import type { SnapshotStore } from '../../src/snapshot/store.js';
import { sourceConfigSchema } from '../../src/sources/config.js';
import { confirmedParts } from '../../src/sync/core/diff.js';
import { KEPT_FILE, NEXT_FILE, stampKept } from '../../src/sync/unchanged/kept-rows.js';
import { STAMP_FILE, keptDigest } from '../../src/sync/unchanged/kept-stamp.js';
import { readAndDiff } from '../../src/sync/unchanged/unchanged-diff.js';
import { rec, tempDir } from './diff-fixtures.js';

/**
 * Issue 18's unchanged rows, case by case (the property test compares them with the full path at random):
 * the path is taken when it may be, and every writer of the records, a settings change and a crash between
 * the kept file and its stamp each send the read down the full path.
 */

let t: ReturnType<typeof tempDir>;
let db: StateDb;
let store: SnapshotStore;
let keptDir: string;
let n = 0;
beforeEach(() => {
  t = tempDir();
  db = openStateDb(join(t.dir, 'state.db'));
  store = db.snapshot('ds');
  keptDir = join(t.dir, 'kept');
  mkdirSync(keptDir);
});
afterEach(() => {
  db.close();
  t.cleanup();
});

const source = sourceConfigSchema.parse({ type: 'csv' });
const mapping = mappingConfigSchema.parse({ fields: { record_id: 'SKU', api_value: 'SKU', display_name: 'Name', 'attributes.stock': { column: 'Stock', transforms: ['integer'] } } });
const policy = policySchema.parse({});
const digest = keptDigest(source, mapping);

function write(stocks: number[]): string {
  const file = join(t.dir, `export-${n++}.csv`);
  writeFileSync(file, ['SKU,Name,Stock', ...stocks.map((s, i) => `S${i},Item ${i},${s}`)].join('\n') + '\n');
  return file;
}

function work(): string {
  const dir = join(t.dir, `work-${n++}`);
  mkdirSync(dir);
  return dir;
}

/** Read and diff `file`, publish what it found (confirm), stamp its rows when asked. */
async function sync(file: string, stamp = true) {
  const r = await readAndDiff(file, source, mapping, work(), { keptDir, store, policy });
  if (r.changeset === null) throw new Error(`${file}: refused`);
  const parts = confirmedParts(r.changeset);
  store.confirm({ activeVersion: (store.state().activeVersion ?? 0) + 1, upsertTexts: parts.upsertTexts, deletes: parts.deletes, own: parts.own });
  if (stamp) stampKept(keptDir, store, store.generation(), digest);
  return r;
}

const stocks = Array.from({ length: 50 }, (_, i) => i);

describe('unchanged rows (issue 18)', () => {
  it('reads only the rows that differ from the published export at their place', async () => {
    expect((await sync(write(stocks))).path).toBe('full');
    const changed = [...stocks];
    changed[7] = 700;
    const r = await readAndDiff(write(changed), source, mapping, work(), { keptDir, store, policy });
    expect(r.path).toBe('unchanged-rows');
    expect(r.differing).toBe(1);
    expect(r.read.sorted!.count).toBe(1);
    expect(r.changeset!.counts).toMatchObject({ source: 50, changes: 1, unchanged: 49, adds: 0, deletes: 0 });
    expect([...r.changeset!.changes].map((c) => [c.record_id, c.record.attributes])).toEqual([['S7', { stock: 700 }]]);
  });

  it('a deleted row at the end is a delete, a row past the old end an add', async () => {
    await sync(write(stocks));
    const r = await readAndDiff(write([...stocks.slice(0, 48), 1, 2, 3]), source, mapping, work(), { keptDir, store, policy });
    expect(r.path).toBe('unchanged-rows');
    expect(r.changeset!.counts).toMatchObject({ adds: 1, changes: 2, deletes: 0 });
    const shorter = await readAndDiff(write(stocks.slice(0, 45)), source, mapping, work(), { keptDir, store, policy });
    expect(shorter.path).toBe('unchanged-rows');
    expect([...shorter.changeset!.deletes].map((d) => d.record_id)).toEqual(['S45', 'S46', 'S47', 'S48', 'S49']);
  });

  it('finds its place again after rows inserted, deleted or moved: the rest of the file is still unchanged', async () => {
    await sync(write(stocks));
    const file = join(t.dir, 'shifted.csv');
    const lines = stocks.map((s, i) => `S${i},Item ${i},${s}`);
    lines.splice(30, 3); // S30-S32 deleted
    lines.splice(10, 1); // S10 moved to the end
    lines.push('S10,Item 10,10');
    lines.unshift('N1,New 1,1', 'N2,New 2,2');
    writeFileSync(file, ['SKU,Name,Stock', ...lines].join('\n') + '\n');
    const r = await readAndDiff(file, source, mapping, work(), { keptDir, store, policy });
    expect(r.path).toBe('unchanged-rows');
    expect(r.differing).toBe(3);
    expect(r.changeset!.counts).toMatchObject({ source: 49, adds: 2, deletes: 3, changes: 0, unchanged: 47 });
    expect([...r.changeset!.deletes].map((d) => d.record_id)).toEqual(['S30', 'S31', 'S32']);
  });

  it('takes the full path after every other writer of the records: a confirm, a deletion, a rebuild, an adoption', async () => {
    await sync(write(stocks));
    const writes: Array<[string, () => void]> = [
      ['confirm', () => store.confirm({ activeVersion: 10, upserts: [rec('S3', { api_value: 'S3', display_name: 'Item 3', attributes: { stock: 99 } })] })],
      ['delete', () => store.confirm({ activeVersion: 11, deletes: ['S5'] })],
      [
        'rebuild',
        () => {
          const rb = store.beginRebuild();
          rb.add([...store.reader().entries()].map((e) => JSON.parse(e.json)));
          rb.add([rec('X1')]);
          rb.commit(12);
        },
      ],
      // X1, which the rebuild found and nobody owned.
      ['adopt', () => store.adopt(['X1'])],
    ];
    for (const [what, w] of writes) {
      const before = store.generation();
      w();
      expect(store.generation(), what).toBeGreaterThan(before);
      const r = await readAndDiff(write(stocks), source, mapping, work(), { keptDir, store, policy });
      expect(r.path, what).toBe('full');
      expect(r.reason, what).toMatch(/records changed since/);
    }
  });

  it('a plan held or a crash before the stamp leaves the last stamped rows, which still match the records', async () => {
    await sync(write(stocks));
    const changed = [...stocks];
    changed[1] = 100;
    // Read (its rows kept in the next file) but never published: the records are still the stamped rows' records.
    await readAndDiff(write(changed), source, mapping, work(), { keptDir, store, policy });
    expect(existsSync(join(keptDir, NEXT_FILE))).toBe(true);
    const again = await readAndDiff(write(changed), source, mapping, work(), { keptDir, store, policy });
    expect(again.path).toBe('unchanged-rows');
    expect(again.changeset!.counts.changes).toBe(1);
    // Published, then a crash before the stamp: the records moved, the stamp did not.
    await sync(write(changed), false);
    const after = await readAndDiff(write(changed), source, mapping, work(), { keptDir, store, policy });
    expect(after.path).toBe('full');
    expect(after.changeset!.counts.changes).toBe(0);
  });

  it('never trusts a kept file the stamp does not name: renamed but not stamped, cut short, or a torn stamp', async () => {
    await sync(write(stocks));
    const stamp = readFileSync(join(keptDir, STAMP_FILE), 'utf8');
    // The next file renamed into place and a crash before its stamp: another nonce than the stamp's.
    await readAndDiff(write(stocks), source, mapping, work(), { keptDir, store, policy });
    stampKept(keptDir, store, store.generation(), digest);
    writeFileSync(join(keptDir, STAMP_FILE), stamp);
    expect((await readAndDiff(write(stocks), source, mapping, work(), { keptDir, store, policy })).reason).toMatch(/does not match its stamp/);
    // Rows added to the file after it was stamped (or a file written over): another size.
    await sync(write(stocks));
    appendFileSync(join(keptDir, KEPT_FILE), 'c3\tS99\tS99\u0000Item\u00001\n');
    expect((await readAndDiff(write(stocks), source, mapping, work(), { keptDir, store, policy })).reason).toMatch(/does not match its stamp/);
    // A stamp cut off while written.
    await sync(write(stocks));
    writeFileSync(join(keptDir, STAMP_FILE), '{"nonce":"');
    expect((await readAndDiff(write(stocks), source, mapping, work(), { keptDir, store, policy })).reason).toMatch(/unreadable stamp/);
  });

  it('takes the full path while a record is marked as edited by someone else: under keep the diff notes it at every compare', async () => {
    const keep = policySchema.parse({ on_foreign_edit: 'keep' });
    const file = write(stocks);
    let r = await readAndDiff(file, source, mapping, work(), { keptDir, store, policy: keep });
    let parts = confirmedParts(r.changeset!);
    store.confirm({ activeVersion: 1, upsertTexts: parts.upsertTexts, own: parts.own });
    stampKept(keptDir, store, store.generation(), digest);
    // A person renames S3 in the portal; the rebuild notes it, and the next sync keeps their name (and is stamped).
    const rb = store.beginRebuild();
    rb.add([...store.reader().entries()].map((e) => JSON.parse(e.json)).map((x) => (x.record_id === 'S3' ? { ...x, display_name: 'Renamed' } : x)));
    rb.commit(2);
    r = await readAndDiff(write(stocks), source, mapping, work(), { keptDir, store, policy: keep });
    expect(r.changeset!.foreignEdits).toEqual([{ record_id: 'S3', fields: ['display_name'], resolution: 'keep' }]);
    parts = confirmedParts(r.changeset!);
    store.confirm({ activeVersion: 3, upsertTexts: parts.upsertTexts, own: parts.own });
    stampKept(keptDir, store, store.generation(), digest);
    const again = await readAndDiff(write(stocks), source, mapping, work(), { keptDir, store, policy: keep });
    expect(again.path).toBe('full');
    expect(again.changeset!.foreignEdits).toEqual([{ record_id: 'S3', fields: ['display_name'], resolution: 'keep' }]);
  });

  it('takes the full path when the settings a row is mapped with change', async () => {
    await sync(write(stocks));
    const other = mappingConfigSchema.parse({ fields: { record_id: 'SKU', api_value: 'SKU', display_name: { column: 'Name', transforms: ['uppercase'] } } });
    const r = await readAndDiff(write(stocks), source, other, work(), { keptDir, store, policy });
    expect(r.path).toBe('full');
    expect(r.reason).toMatch(/settings/);
    expect(r.changeset!.counts.changes).toBe(50);
  });

  it('reads again in full when a changed row repeats the id of an unchanged one', async () => {
    await sync(write(stocks));
    const file = join(t.dir, 'repeat.csv');
    writeFileSync(file, ['SKU,Name,Stock', ...stocks.map((s, i) => (i === 9 ? `S2,Item 9,${s}` : `S${i},Item ${i},${s}`))].join('\n') + '\n');
    const r = await readAndDiff(file, source, mapping, work(), { keptDir, store, policy: policySchema.parse({}) });
    expect(r.reason).toMatch(/record_id of another row/);
    expect(r.read.rowErrors.map((e) => [e.line, e.code])).toEqual([[11, 'DUPLICATE_KEY']]);
  });
});
