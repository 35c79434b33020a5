import { systemClock } from '../../src/clock.js';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hasCode } from '../../src/errors.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import { tempDir } from '../sync/diff-fixtures.js';

let t: ReturnType<typeof tempDir>;
let db: StateDb;
let now = 100;
beforeEach(() => {
  t = tempDir();
  now = 100;
  db = openStateDb(join(t.dir, 'state.db'), { clock: { ...systemClock, now: () => now, sleep: async () => {} } });
});
afterEach(() => {
  db.close();
  t.cleanup();
});

describe('Journal', () => {
  it('records intent before a request, then job id and outcome, and lists pending work for resume', () => {
    const j = db.journal;
    j.beginPlan('shop', { planId: 'p1', path: 'replace', summary: { adds: 3 } });
    const put = j.recordIntent('p1', { step: 1, kind: 'replace', idempotencyKey: 'k-1', bodyHash: 'h', intent: { records: 3 } });
    expect(put).toMatchObject({ status: 'intent', idempotencyKey: 'k-1', bodyHash: 'h', jobId: null, draftVersion: null });
    now = 200;
    j.update(put.id, { jobId: 'job-9' });
    j.update(put.id, { draftVersion: 5 });
    const pub = j.recordIntent('p1', { step: 2, kind: 'publish', draftVersion: 5 });
    j.markDone(put.id, { status: 'STAGED' });

    const pending = j.pending('shop')!;
    expect(pending.plan).toMatchObject({ planId: 'p1', path: 'replace', status: 'open', summary: { adds: 3 }, updatedAt: 200 });
    expect(pending.entries.map((e) => [e.step, e.status, e.jobId, e.draftVersion])).toEqual([
      [1, 'done', 'job-9', 5],
      [2, 'intent', null, 5],
    ]);
    expect(pending.pending.map((e) => e.id)).toEqual([pub.id]);
    expect(pending.entries[0]!.result).toEqual({ status: 'STAGED' });

    j.markFailed(pub.id, { code: 'DRAFT_EXPIRED' });
    // The outcome is one of the ledger's closing transitions, checked by the type (tsc -p test fails otherwise).
    // @ts-expect-error a free-text outcome is not a plan end
    expect(() => j.plan('p1') && false && j.finishPlan('p1', 'failed')).not.toThrow();
    j.finishPlan('p1', 'rejected');
    expect(j.pending('shop')).toBeNull();
    expect(j.plan('p1')).toMatchObject({ status: 'finished', outcome: 'rejected' });
  });

  it('allows one open plan per dataset and never reuses a plan id', () => {
    const j = db.journal;
    j.beginPlan('shop', { planId: 'p1', path: 'per_record' });
    j.beginPlan('other', { planId: 'p2', path: 'per_record' });
    expect(catchCode(() => j.beginPlan('shop', { planId: 'p3', path: 'replace' }))).toBe('JOURNAL_BUSY');
    j.finishPlan('p1', 'published');
    expect(catchCode(() => j.beginPlan('shop', { planId: 'p1', path: 'replace' }))).toBe('JOURNAL_PLAN_EXISTS');
    expect(() => j.recordIntent('p2', { step: 1, kind: 'post' })).not.toThrow();
    expect(() => j.recordIntent('p2', { step: 1, kind: 'post' })).toThrow(); // steps are unique
  });

  it('survives a reopen (the journal is durable state) and prunes old finished plans', () => {
    db.journal.beginPlan('shop', { planId: 'p1', path: 'per_record' });
    db.journal.recordIntent('p1', { step: 1, kind: 'post', intent: { record_id: 'a' }, idempotencyKey: 'k' });
    db.close();
    db = openStateDb(join(t.dir, 'state.db'), { clock: { ...systemClock, now: () => now, sleep: async () => {} } });
    const p = db.journal.pending('shop')!;
    expect(p.pending[0]).toMatchObject({ kind: 'post', intent: { record_id: 'a' }, idempotencyKey: 'k' });
    db.journal.finishPlan('p1', 'published');
    now = 10_000;
    expect(db.journal.prune(5_000)).toEqual(['p1']);
    expect(db.journal.plan('p1')).toBeNull();
    expect(db.journal.entries('p1')).toEqual([]);
  });

  it('prunes one dataset only, and never a plan it is told to keep', () => {
    for (const [id, ds] of [['a1', 'shop'], ['a2', 'shop'], ['b1', 'other']] as const) {
      db.journal.beginPlan(ds, { planId: id, path: 'per_record' });
      db.journal.finishPlan(id, 'published');
    }
    now = 10_000;
    expect(db.journal.prune(5_000, { dataset: 'shop', keep: ['a2'] })).toEqual(['a1']);
    expect(db.journal.plan('a2')).not.toBeNull();
    expect(db.journal.plan('b1')).not.toBeNull();
  });
});

function catchCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return hasCode(err, 'JOURNAL_BUSY', 'JOURNAL_PLAN_EXISTS') ? err.code : String(err);
  }
  return undefined;
}
