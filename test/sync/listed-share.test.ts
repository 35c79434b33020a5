import { describe, expect, it } from 'vitest';
import type { ChangesetSummary } from '../../src/sync/core/changeset.js';
import { INDEXED_MAX_SHARE, mergeByIndex, withUnlisted } from '../../src/sync/core/listed-share.js';

/** Issue 13: which merge a feed file takes (listed-share.ts), and the records an indexed diff did not read put back. */

describe('mergeByIndex', () => {
  const at = (rows: number, over: Partial<Parameters<typeof mergeByIndex>[0]> = {}) => mergeByIndex({ role: 'update', missing: 'leave', rows, records: 100_000, ...over });

  it('an update feed that leaves the rest, or a change list, listing up to the share: by index', () => {
    expect(at(10_000)).toBe(true);
    expect(at(INDEXED_MAX_SHARE * 100_000)).toBe(true);
    expect(at(INDEXED_MAX_SHARE * 100_000 + 1)).toBe(false);
    expect(at(10_000, { role: 'changes' })).toBe(true);
    expect(at(90_000, { role: 'changes' })).toBe(false);
  });

  it('a full feed, and a missing strategy that changes records not listed, read the whole snapshot whatever the share', () => {
    expect(at(1, { role: 'full' })).toBe(false);
    expect(at(1, { missing: 'set' })).toBe(false);
    expect(at(1, { missing: 'deactivate' })).toBe(false);
  });

  it('a small dataset goes by the same share; a file longer than an empty snapshot is never read by index', () => {
    expect(at(4, { records: 10 })).toBe(true);
    expect(at(5, { records: 10 })).toBe(false);
    expect(at(1, { records: 0 })).toBe(false);
  });
});

describe('withUnlisted', () => {
  const summary = (ownership: 'source' | 'full'): Omit<ChangesetSummary, 'head'> => ({
    ownership,
    counts: { source: 12, snapshot: 13, snapshotOwned: 11, adds: 1, changes: 5, deletes: 2, unchanged: 6, adopted: 0, owned: 12, notOwned: 1, notOwnedDeletes: 0, deletable: 11, result: 13 },
    digest: 'd',
    foreignEdits: [],
    values: { fields: { 'attributes.stock': { changed: 5, zeroed: 1, jumped: 0, zeroable: 9, nonzero: 8, samples: { changed: [], zeroed: [], jumped: [] } } } },
  });

  it('ownership source: owned records not read are compared unchanged (values in the bases), the others left alone', () => {
    const out = withUnlisted(summary('source'), { records: 100, owned: 90, bases: { 'attributes.stock': { zeroable: 70, nonzero: 60 } } }, 'source');
    expect(out.counts).toEqual({ source: 102, snapshot: 113, snapshotOwned: 101, adds: 1, changes: 5, deletes: 2, unchanged: 96, adopted: 0, owned: 102, notOwned: 11, notOwnedDeletes: 0, deletable: 101, result: 113 });
    expect(out.values!.fields['attributes.stock']).toMatchObject({ changed: 5, zeroed: 1, zeroable: 79, nonzero: 68 });
    expect(out.digest).toBe('d');
  });

  it('ownership full: every record is deletable; a not-owned record left unread is refused (it would have been adopted)', () => {
    const out = withUnlisted(summary('full'), { records: 100, owned: 100, bases: {} }, 'full');
    expect(out.counts).toMatchObject({ snapshot: 113, deletable: 113, notOwned: 1, result: 113 });
    expect(() => withUnlisted(summary('full'), { records: 100, owned: 99, bases: {} }, 'full')).toThrow(/not-owned/);
  });
});
