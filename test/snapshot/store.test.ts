import { systemClock } from '../../src/clock.js';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DatasetRecord } from '../../src/model/record.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import { rec, recs, tempDir } from '../sync/diff-fixtures.js';

let t: ReturnType<typeof tempDir>;
let db: StateDb;
let now = 1_000;
beforeEach(() => {
  t = tempDir();
  now = 1_000;
  db = openStateDb(join(t.dir, 'state.db'), { clock: { ...systemClock, now: () => now, sleep: async () => {} } });
});
afterEach(() => {
  db.close();
  t.cleanup();
});

const ids = (db: StateDb, ds = 'shop') => [...db.snapshot(ds).reader().entries()].map((e) => e.record_id);

describe('SnapshotStore', () => {
  it('starts empty: first run has no active version', () => {
    expect(db.snapshot('shop').info()).toMatchObject({ activeVersion: null, etag: null, recordCount: 0, lastSource: null, held: null });
  });

  it('confirm applies upserts, deletes, adoptions, version and source in one step', () => {
    const s = db.snapshot('shop');
    const rb = s.beginRebuild();
    rb.add([rec('hand')]);
    rb.commit(2);
    s.confirm({ activeVersion: 3, upserts: recs(3), own: ['hand'], source: { fileHash: 'abc', rowCount: 3, at: 5 } });
    s.confirm({ activeVersion: 4, upserts: [rec('r00001', { display_name: 'New' })], deletes: ['r00002'] });
    expect(ids(db)).toEqual(['hand', 'r00000', 'r00001']);
    expect(s.get('r00001')?.record.display_name).toBe('New');
    expect(s.info()).toMatchObject({
      activeVersion: 4,
      etag: '"v4"',
      recordCount: 3,
      ownedCount: 3,
      notOwnedCount: 0,
      lastSource: { fileHash: 'abc', rowCount: 3, at: 5 },
    });
  });

  it('confirm is all or nothing', () => {
    const s = db.snapshot('shop');
    s.confirm({ activeVersion: 1, upserts: recs(2) });
    function* failing(): Generator<DatasetRecord> {
      yield rec('r00000', { display_name: 'Changed' });
      throw new Error('boom while confirming');
    }
    expect(() => s.confirm({ activeVersion: 2, upserts: failing(), deletes: ['r00001'] })).toThrow('boom');
    expect(s.info().activeVersion).toBe(1);
    expect(s.get('r00000')?.record.display_name).toBe('Item r00000');
    expect(ids(db)).toEqual(['r00000', 'r00001']);
  });

  it('streams in record_id byte order across pages, per dataset', () => {
    const s = db.snapshot('shop');
    const odd = ['b', 'B', 'a', '_x', '-y', '.z', ':w', '0', 'Z9', 'a.b', 'a-b', 'a_b', 'A:b'];
    s.confirm({ activeVersion: 1, upserts: [...recs(2500), ...odd.map((id) => rec(id))] });
    db.snapshot('other').confirm({ activeVersion: 1, upserts: [rec('r00000x')] });
    const got = ids(db);
    const bytes = [...got].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    expect(got).toEqual(bytes);
    expect(got.length).toBe(2500 + odd.length);
    expect(ids(db, 'other')).toEqual(['r00000x']);
  });

  it('the reader survives writes between pages (no statement left open)', () => {
    const s = db.snapshot('shop');
    s.confirm({ activeVersion: 1, upserts: recs(2100) });
    let n = 0;
    for (const _ of s.reader().entries()) {
      if (++n === 1000) db.snapshot('other').confirm({ activeVersion: 1, upserts: [rec('x')] });
    }
    expect(n).toBe(2100);
  });

  it('rebuild keeps ownership, drops vanished records, and notes foreign edits of owned records', () => {
    const s = db.snapshot('shop');
    s.confirm({ activeVersion: 1, upserts: [rec('a'), rec('b'), rec('c')] });
    const rb = s.beginRebuild();
    rb.add([rec('a', { display_name: 'Edited', aliases: ['x'] }), rec('c')]);
    rb.add([rec('hand')]);
    now = 2_000;
    const report = rb.commit(7);
    expect(report).toEqual({
      records: 3,
      added: 1,
      removed: 1,
      changed: 1,
      ownedRemoved: 1,
      foreignEdits: [{ record_id: 'a', fields: ['display_name', 'aliases'] }],
    });
    expect(s.info()).toMatchObject({ activeVersion: 7, recordCount: 3, ownedCount: 2, notOwnedCount: 1, rebuiltAt: 2_000 });
    expect(s.get('a')).toMatchObject({ owned: true, foreignFields: ['display_name', 'aliases'] });
    expect(s.get('hand')).toMatchObject({ owned: false, foreignFields: [] });
  });

  it('confirm keeps a foreign-edit mark only while the field keeps the server value', () => {
    const s = db.snapshot('shop');
    s.confirm({ activeVersion: 1, upserts: [rec('a')] });
    const rb = s.beginRebuild();
    rb.add([rec('a', { display_name: 'Edited', active: false })]);
    rb.commit(2);
    // the source overwrote display_name, kept active as edited on the server
    s.confirm({ activeVersion: 3, upserts: [rec('a', { display_name: 'Source', active: false })] });
    expect(s.get('a')?.foreignFields).toEqual(['active']);
  });

  it('an aborted rebuild leaves the snapshot as it was', () => {
    const s = db.snapshot('shop');
    s.confirm({ activeVersion: 1, upserts: [rec('a')] });
    const rb = s.beginRebuild();
    rb.add([rec('z')]);
    rb.abort();
    expect(ids(db)).toEqual(['a']);
    expect(s.info().activeVersion).toBe(1);
    expect(db.conn.prepare('SELECT count(*) FROM rebuild_records').pluck().get()).toBe(0);
  });

  it('holds, clears, and records outcome and job timing', () => {
    const s = db.snapshot('shop');
    s.hold({ kind: 'guard', version: 9, reason: 'max_delete_ratio', planId: 'p1', summary: { deletes: 40 } });
    s.recordOutcome('held', { guard: 'max_delete_ratio' });
    s.recordJobTiming(1234.4, 500);
    expect(s.info()).toMatchObject({
      held: { kind: 'guard', version: 9, reason: 'max_delete_ratio', planId: 'p1', summary: { deletes: 40 }, since: 1_000 },
      lastOutcome: { outcome: 'held', detail: { guard: 'max_delete_ratio' }, at: 1_000 },
      lastJob: { ms: 1234, records: 500 },
    });
    s.clearHeld();
    expect(s.held()).toBeNull();
    expect(db.datasets()).toEqual(['shop']);
  });
});
