import Database from 'better-sqlite3';
import { copyFileSync, cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { policySchema } from '../../src/config/policy.js';
import { mappingConfigSchema } from '../../src/mapping/config.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import { MIGRATIONS } from '../../src/snapshot/migrations.js';
import { sourceConfigSchema } from '../../src/sources/config.js';
import { confirmedParts } from '../../src/sync/core/diff.js';
import { stampKept } from '../../src/sync/unchanged/kept-rows.js';
import { keptDigest } from '../../src/sync/unchanged/kept-stamp.js';
import { readAndDiff } from '../../src/sync/unchanged/unchanged-diff.js';
import { tempDir } from './diff-fixtures.js';

/**
 * Issue 18's stamp names the records by more than their generation (migration 19): kept rows stamped against one
 * state database are never taken against another that counted to the same generation with other records (made
 * again, copied from another machine), nor against a backup of the same one restored and written to that number
 * again. Each case brings the records to the stamped generation with other values and reads the stamped export
 * again: taken as unchanged, it would publish nothing where the full read publishes the difference.
 */

let t: ReturnType<typeof tempDir>;
let db: StateDb;
let statePath: string;
let keptDir: string;
let n = 0;
beforeEach(() => {
  t = tempDir();
  statePath = join(t.dir, 'state', 'state.db');
  mkdirSync(join(t.dir, 'state'));
  db = openStateDb(statePath);
  keptDir = join(t.dir, 'state', 'kept');
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
const stocks = Array.from({ length: 20 }, (_, i) => i);

function write(values: number[]): string {
  const file = join(t.dir, `export-${n++}.csv`);
  writeFileSync(file, ['SKU,Name,Stock', ...values.map((s, i) => `S${i},Item ${i},${s}`)].join('\n') + '\n');
  return file;
}

function work(): string {
  const dir = join(t.dir, `work-${n++}`);
  mkdirSync(dir);
  return dir;
}

const read = (file: string, on: StateDb = db) => readAndDiff(file, source, mapping, work(), { keptDir, store: on.snapshot('ds'), policy });

/** Read, diff and publish `file` into `on` (confirm), stamping its rows against `on` when asked (as a published sync does). */
async function publish(file: string, on: StateDb = db, stamp = true) {
  const store = on.snapshot('ds');
  const elsewhere = join(t.dir, `elsewhere-${n++}`);
  if (!stamp) mkdirSync(elsewhere);
  const r = await readAndDiff(file, source, mapping, work(), { keptDir: stamp ? keptDir : elsewhere, store, policy });
  const parts = confirmedParts(r.changeset!);
  store.confirm({ activeVersion: (store.state().activeVersion ?? 0) + 1, upsertTexts: parts.upsertTexts, deletes: parts.deletes, own: parts.own });
  if (stamp) stampKept(keptDir, store, store.generation(), digest);
  return r;
}

/** The file is read as the full read reads it: its changes against the records now, whichever path. */
async function expectFull(file: string, reason: RegExp, changes: number, on: StateDb = db) {
  const r = await read(file, on);
  expect(r.path, `${r.reason}`).toBe('full');
  expect(r.reason).toMatch(reason);
  expect(r.changeset!.counts.changes).toBe(changes);
}

function reopen(): void {
  db.close();
  db = openStateDb(statePath);
}

function removeDb(path: string): void {
  for (const f of [path, `${path}-wal`, `${path}-shm`]) rmSync(f, { force: true });
}

describe('the stamp of kept rows names the state database and its records (issue 18, migration 19)', () => {
  it('state.db deleted and made again while the kept rows stay: never taken, though the generation is the stamped one', async () => {
    const e0 = write(stocks);
    await publish(e0);
    const stamped = db.snapshot('ds').generation();
    db.close();
    removeDb(statePath);
    db = openStateDb(statePath);
    // The new database's own records reach the stamped generation with other stocks (a plan published without a stamp).
    await publish(write(stocks.map((s) => s + 1000)), db, false);
    expect(db.snapshot('ds').generation()).toBe(stamped);
    await expectFull(e0, /state\.db is not the one/, 20);
  });

  it('a state.db copied from another machine at the same generation: never taken', async () => {
    const e0 = write(stocks);
    await publish(e0);
    const stamped = db.snapshot('ds').generation();
    const other = openStateDb(join(t.dir, 'other.db'));
    await publish(write(stocks.map((s) => (s % 3 === 0 ? s + 7 : s))), other, false);
    expect(other.snapshot('ds').generation()).toBe(stamped);
    other.close();
    db.close();
    removeDb(statePath);
    copyFileSync(join(t.dir, 'other.db'), statePath);
    db = openStateDb(statePath);
    await expectFull(e0, /state\.db is not the one/, 7);
  });

  it('a backup of the same state.db restored, then written up to the stamped generation with other records: never taken', async () => {
    await publish(write(stocks));
    // The backup: taken after that publish (generation 20), before the next.
    db.close();
    copyFileSync(statePath, join(t.dir, 'backup.db'));
    db = openStateDb(statePath);
    const changed = stocks.map((s, i) => (i === 1 ? 100 : s));
    const e1 = write(changed);
    await publish(e1);
    const stamped = db.snapshot('ds').generation();
    db.close();
    removeDb(statePath);
    copyFileSync(join(t.dir, 'backup.db'), statePath);
    db = openStateDb(statePath);
    // Older than the stamp: said so.
    await expectFull(e1, /older than/, 1);
    // Another record written: the restored database reaches the stamped generation, S1 as the backup had it, S9 changed.
    const store = db.snapshot('ds');
    const s9 = JSON.parse([...store.reader().entries()].find((e) => e.record_id === 'S9')!.json);
    store.confirm({ activeVersion: 9, upserts: [{ ...s9, attributes: { stock: 999 } }] });
    expect(store.generation()).toBe(stamped);
    await expectFull(e1, /restored from a backup/, 2);
  });

  it('a state dir restored whole (state.db and kept rows of one moment) still takes the kept rows', async () => {
    await publish(write(stocks));
    const e1 = write(stocks.map((s, i) => (i === 4 ? 44 : s)));
    await publish(e1);
    db.close();
    cpSync(join(t.dir, 'state'), join(t.dir, 'backup'), { recursive: true });
    db = openStateDb(statePath);
    await publish(write(stocks.map((s, i) => (i === 5 ? 55 : s))));
    db.close();
    rmSync(join(t.dir, 'state'), { recursive: true });
    cpSync(join(t.dir, 'backup'), join(t.dir, 'state'), { recursive: true });
    db = openStateDb(statePath);
    const r = await read(write(stocks.map((s, i) => (i === 4 ? 44 : i === 6 ? 66 : s))));
    expect(r.path, `${r.reason}`).toBe('unchanged-rows');
    expect(r.changeset!.counts).toMatchObject({ changes: 1, unchanged: 19 });
  });

  it('a stamp made again of unchanged records keeps their mark; the records written since the publish leave nothing stamped', async () => {
    const e0 = write(stocks);
    await publish(e0);
    const store = db.snapshot('ds');
    const mark = store.recordsMark();
    await publish(e0);
    expect(store.recordsMark()).toEqual(mark);
    expect((await read(e0)).path).toBe('unchanged-rows');
    // Read, then a record written before the stamp: the generation asked for is gone, so no stamp names these rows.
    const r = await read(e0);
    expect(r.path).toBe('unchanged-rows');
    store.confirm({ activeVersion: 5, deletes: ['S3'] });
    stampKept(keptDir, store, mark.generation, digest);
    await expectFull(e0, /first sync/, 0);
  });

  it('migration 19 gives an existing database an identity once, and a new database another', () => {
    const path = join(t.dir, 'v18.db');
    const raw = new Database(path);
    for (const m of MIGRATIONS.filter((x) => x.version <= 18)) raw.exec(m.sql);
    raw.pragma('user_version = 18');
    raw.close();
    const old = openStateDb(path);
    const id = old.snapshot('ds').recordsMark().db;
    old.close();
    const again = openStateDb(path);
    expect(again.snapshot('ds').recordsMark().db).toBe(id);
    again.close();
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(db.snapshot('ds').recordsMark().db).not.toBe(id);
  });
});
