import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { recordJson, textHash } from '../../src/model/record-json.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import { SUSPEND_AFTER } from '../../src/snapshot/generation-triggers.js';
import { rec, recs, tempDir } from '../sync/diff-fixtures.js';

/**
 * Issue 18: a confirm (or adoption) of many records suspends migration 17's generation triggers inside its own
 * transaction once it has written SUSPEND_AFTER rows with them. The guarantee stays: the generation moves with
 * every write of the records, by any path, because the triggers are there at every commit.
 */

let t: ReturnType<typeof tempDir>;
let db: StateDb;
let other: Database.Database;
const DS = 'shop';
const MANY = SUSPEND_AFTER + 500;

beforeEach(() => {
  t = tempDir();
  db = openStateDb(join(t.dir, 'state.db'), { clock: systemClock });
  // Another process's connection: a writer that knows nothing of the store.
  other = new Database(join(t.dir, 'state.db'));
  other.pragma('busy_timeout = 5000');
});
afterEach(() => {
  other.close();
  db.close();
  t.cleanup();
});

const triggers = (conn: Database.Database) => conn.prepare(`SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' ORDER BY name`).all();
const generation = () => db.snapshot(DS).generation();
const count = () => db.conn.prepare('SELECT count(*) FROM records WHERE dataset = ?').pluck().get(DS) as number;
const texts = (rs: DatasetRecord[]) => rs.map((r, i) => ({ record_id: r.record_id, json: recordJson(r), line: i + 2 }));

/** Each raw write another connection makes moves the generation. */
function rawWritesBump(): void {
  const json = recordJson(rec('raw-1'));
  const writes: Array<[string, () => unknown]> = [
    ['insert', () => other.prepare('INSERT INTO records (dataset, record_id, json, hash, owned) VALUES (?, ?, ?, ?, 0)').run(DS, 'raw-1', json, textHash(json))],
    ['update', () => other.prepare("UPDATE records SET owned = 1 WHERE dataset = ? AND record_id = 'raw-1'").run(DS)],
    ['delete', () => other.prepare("DELETE FROM records WHERE dataset = ? AND record_id = 'raw-1'").run(DS)],
  ];
  for (const [what, w] of writes) {
    const before = generation();
    w();
    expect(generation(), what).toBeGreaterThan(before);
  }
}

describe('generation triggers around a large confirm', () => {
  it('a first confirm of many records moves the generation and leaves the triggers as migrated; a write by another path after it moves it again', () => {
    const migrated = triggers(db.conn);
    expect(migrated.map((r) => (r as { name: string }).name)).toEqual(['records_generation_delete', 'records_generation_insert', 'records_generation_update']);
    const before = generation();
    db.snapshot(DS).confirm({ activeVersion: 1, upsertTexts: texts(recs(MANY)) });
    expect(count()).toBe(MANY);
    expect(generation()).toBeGreaterThan(before);
    expect(triggers(db.conn)).toEqual(migrated);
    expect(triggers(other)).toEqual(migrated);
    rawWritesBump();
  });

  it('a large change of existing records (updates and deletes past the suspension) moves it, and the triggers are back', () => {
    const s = db.snapshot(DS);
    s.confirm({ activeVersion: 1, upsertTexts: texts(recs(MANY)) });
    const migrated = triggers(db.conn);
    const before = generation();
    s.confirm({ activeVersion: 2, upserts: recs(MANY).map((r) => ({ ...r, display_name: `${r.display_name} new` })), deletes: recs(MANY).slice(0, 10).map((r) => r.record_id) });
    expect(generation()).toBeGreaterThan(before);
    expect(count()).toBe(MANY - 10);
    expect(triggers(db.conn)).toEqual(migrated);
    rawWritesBump();
  });

  it('inside an outer transaction, a write after the large confirm moves the generation again', () => {
    const s = db.snapshot(DS);
    db.transaction(() => {
      s.confirm({ activeVersion: 1, upsertTexts: texts(recs(MANY)) });
      const afterConfirm = s.generation();
      expect(afterConfirm).toBeGreaterThan(0);
      db.conn.prepare("UPDATE records SET owned = 0 WHERE dataset = ? AND record_id = 'r00007'").run(DS);
      expect(s.generation()).toBeGreaterThan(afterConfirm);
    });
  });

  it('a large confirm that throws after the suspension leaves the triggers, the records and the generation as they were', () => {
    const s = db.snapshot(DS);
    s.confirm({ activeVersion: 1, upserts: recs(3) });
    const migrated = triggers(db.conn);
    const before = generation();
    function* failing() {
      yield* texts(recs(MANY, 'n'));
      throw new Error('boom after the suspension');
    }
    expect(() => s.confirm({ activeVersion: 2, upsertTexts: failing() })).toThrow('boom');
    expect(count()).toBe(3);
    expect(generation()).toBe(before);
    expect(triggers(db.conn)).toEqual(migrated);
    rawWritesBump();
  });

  it('an adoption of many records moves the generation and leaves the triggers', () => {
    const s = db.snapshot(DS);
    const rb = s.beginRebuild();
    rb.add(recs(MANY));
    rb.commit(1);
    const migrated = triggers(db.conn);
    const before = generation();
    s.adopt(recs(MANY).map((r) => r.record_id));
    expect(s.info().ownedCount).toBe(MANY);
    expect(generation()).toBeGreaterThan(before);
    expect(triggers(db.conn)).toEqual(migrated);
    rawWritesBump();
  });
});
