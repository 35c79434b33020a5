import fc from 'fast-check';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { hasCode } from '../../src/errors.js';
import type { DatasetRecord, RecordField } from '../../src/model/record.js';
import { openStateDb } from '../../src/snapshot/db.js';
import { snapshotReaderFrom, type SnapshotSeed } from '../../src/model/snapshot-reader.js';
import { confirmedParts, diffRecords, diffSorted } from '../../src/sync/core/diff.js';
import { replaceRecords } from '../../src/sync/core/ownership.js';
import type { OwnershipMode } from '../../src/config/policy.js';
import { rec, recs, tempDir } from './diff-fixtures.js';

const notOwned = (r: DatasetRecord): SnapshotSeed => ({ record: r, owned: false });
const all = <T>(xs: Iterable<T>): T[] => [...xs];
const parsed = (xs: Iterable<{ json: string }>): DatasetRecord[] => all(xs).map((r) => JSON.parse(r.json) as DatasetRecord);
const foreign = (r: DatasetRecord, fields: RecordField[]): SnapshotSeed => ({ record: r, owned: true, foreignFields: fields });

interface Case {
  name: string;
  source: DatasetRecord[];
  snapshot: SnapshotSeed[];
  ownership?: OwnershipMode;
  keep?: boolean;
  adds?: string[];
  changes?: Array<[string, Record<string, unknown>]>;
  deletes?: string[];
  counts?: Record<string, number>;
  foreignEdits?: Array<{ record_id: string; fields: RecordField[]; resolution: 'overwrite' | 'keep' }>;
}

const cases: Case[] = [
  { name: 'first run into an empty dataset: all adds', source: recs(3), snapshot: [], adds: ['r00000', 'r00001', 'r00002'], counts: { result: 3, deletable: 0 } },
  { name: 'identical: nothing', source: recs(3), snapshot: recs(3), counts: { unchanged: 3, adds: 0, changes: 0, deletes: 0 } },
  {
    name: 'a changed name gives a patch of that field only',
    source: [rec('a', { display_name: 'New' }), rec('b')],
    snapshot: [rec('a'), rec('b')],
    changes: [['a', { display_name: 'New' }]],
  },
  {
    name: 'aliases and attributes are replaced whole (A33)',
    source: [rec('a', { aliases: ['x', 'y'], attributes: { stock: 4, color: 'red' } })],
    snapshot: [rec('a', { aliases: ['x'], attributes: { stock: 3, color: 'red' } })],
    changes: [['a', { aliases: ['x', 'y'], attributes: { stock: 4, color: 'red' } }]],
  },
  { name: 'attribute key order is not a change', source: [rec('a', { attributes: { b: 1, a: 2 } })], snapshot: [rec('a', { attributes: { a: 2, b: 1 } })], counts: { unchanged: 1 } },
  {
    name: 'source: an owned record gone from the export is deleted',
    source: [rec('a')],
    snapshot: [rec('a'), rec('b')],
    deletes: ['b'],
    counts: { deletable: 2, result: 1, notOwned: 0 },
  },
  {
    name: 'source: a record the connector does not own is left alone',
    source: [rec('a')],
    snapshot: [rec('a'), notOwned(rec('hand'))],
    counts: { notOwned: 1, deletable: 1, result: 2, snapshotOwned: 1 },
  },
  {
    name: 'full: everything not in the export is deleted, not-owned included',
    ownership: 'full',
    source: [rec('a')],
    snapshot: [rec('a'), rec('b'), notOwned(rec('hand'))],
    deletes: ['b', 'hand'],
    counts: { notOwned: 0, notOwnedDeletes: 1, deletable: 3, result: 1 },
  },
  {
    name: 'first-run adoption: overlapping ids are adopted, the rest left alone and counted',
    source: [rec('a'), rec('b', { display_name: 'Source name' }), rec('c')],
    snapshot: [notOwned(rec('a')), notOwned(rec('b')), notOwned(rec('hand1')), notOwned(rec('hand2'))],
    adds: ['c'],
    changes: [['b', { display_name: 'Source name' }]],
    counts: { adopted: 2, notOwned: 2, owned: 3, deletable: 2, result: 5, snapshotOwned: 0 },
  },
  {
    name: 'foreign edit, overwrite: the source wins on the edited field',
    source: [rec('a', { display_name: 'Source' })],
    snapshot: [foreign(rec('a', { display_name: 'Portal' }), ['display_name'])],
    changes: [['a', { display_name: 'Source' }]],
    foreignEdits: [{ record_id: 'a', fields: ['display_name'], resolution: 'overwrite' }],
  },
  {
    name: 'foreign edit, keep: the edited field stays, others follow the source',
    keep: true,
    source: [rec('a', { display_name: 'Source', api_value: 'A2' })],
    snapshot: [foreign(rec('a', { display_name: 'Portal' }), ['display_name'])],
    changes: [['a', { api_value: 'A2' }]],
    foreignEdits: [{ record_id: 'a', fields: ['display_name'], resolution: 'keep' }],
  },
  {
    name: 'foreign edit, keep, nothing else changed: no request',
    keep: true,
    source: [rec('a', { display_name: 'Source' })],
    snapshot: [foreign(rec('a', { display_name: 'Portal' }), ['display_name'])],
    counts: { unchanged: 1 },
    foreignEdits: [{ record_id: 'a', fields: ['display_name'], resolution: 'keep' }],
  },
  {
    name: 'mixed order of ids: merge by byte order',
    source: [rec('b'), rec('A'), rec('a.1'), rec('_')],
    snapshot: [rec('Z'), rec('a.1', { active: false }), rec('a')],
    adds: ['A', '_', 'b'],
    changes: [['a.1', { active: true }]],
    deletes: ['Z', 'a'],
  },
];

describe('diffRecords (table)', () => {
  for (const c of cases) {
    it(c.name, async () => {
      const cs = await diffRecords(c.source, snapshotReaderFrom(c.snapshot), {
        ownership: c.ownership ?? 'source',
        onForeignEdit: c.keep ? 'keep' : 'overwrite',
      });
      expect(all(cs.adds).map((r) => r.record_id)).toEqual(c.adds ?? []);
      expect(all(cs.changes).map((ch) => [ch.record_id, ch.patch])).toEqual(c.changes ?? []);
      expect(all(cs.changes).every((ch) => ch.fields.join() === Object.keys(ch.patch).join())).toBe(true);
      expect(all(cs.deletes).map((d) => d.record_id)).toEqual(c.deletes ?? []);
      expect(cs.counts).toMatchObject({ source: c.source.length, snapshot: c.snapshot.length, ...c.counts });
      expect(cs.foreignEdits).toEqual(c.foreignEdits ?? []);
      expect(cs.counts.adds + cs.counts.changes + cs.counts.unchanged).toBe(cs.counts.source);
    });
  }

  it('keep: the desired record (replace body, confirm) carries the server value', async () => {
    const cs = await diffRecords([rec('a', { display_name: 'Source', api_value: 'A2' })], snapshotReaderFrom([foreign(rec('a', { display_name: 'Portal' }), ['display_name'])]), {
      ownership: 'source',
      onForeignEdit: 'keep',
    });
    expect(parsed(cs.records)[0]).toMatchObject({ display_name: 'Portal', api_value: 'A2' });
    expect(parsed(confirmedParts(cs).upsertTexts)[0]).toMatchObject({ display_name: 'Portal', api_value: 'A2' });
  });

  it('reads an async, unsorted source', async () => {
    async function* gen(): AsyncGenerator<DatasetRecord> {
      for (const id of ['c', 'a', 'b']) yield rec(id);
    }
    const cs = await diffRecords(gen(), snapshotReaderFrom([]), { ownership: 'source' });
    expect(all(cs.records).map((r) => r.record_id)).toEqual(['a', 'b', 'c']);
  });

  it('rejects a duplicate record_id', async () => {
    const err = await diffRecords([rec('a'), rec('b'), rec('a')], snapshotReaderFrom([]), { ownership: 'source' }).catch((e: unknown) => e);
    expect(hasCode(err, 'DUPLICATE_RECORD_ID')).toBe(true);
    expect((err as { action: string }).action).toBe('reject');
  });

  it('equal changesets have equal digests; any difference changes it', () => {
    const d = (src: DatasetRecord[]) => diffSorted(src, snapshotReaderFrom([rec('a'), rec('b')]), { ownership: 'source' }).digest;
    expect(d([rec('a'), rec('c')])).toBe(d([rec('a'), rec('c')]));
    expect(d([rec('a'), rec('c')])).not.toBe(d([rec('a'), rec('c', { active: false })]));
    expect(d([rec('a')])).not.toBe(d([rec('b')]));
  });

  it('diffs against the SQLite snapshot reader', async () => {
    const t = tempDir();
    const db = openStateDb(join(t.dir, 'state.db'));
    try {
      const s = db.snapshot('shop');
      s.confirm({ activeVersion: 1, upserts: recs(2500) });
      const src = recs(2600)
        .filter((r) => r.record_id !== 'r00007')
        .map((r) => (r.record_id === 'r00010' ? rec('r00010', { active: false }) : r));
      const cs = await diffRecords(src, s.reader(), { ownership: 'source' });
      expect(cs.counts).toMatchObject({ adds: 100, changes: 1, deletes: 1, unchanged: 2498, snapshot: 2500 });
      expect(all(cs.changes)[0]?.patch).toEqual({ active: false });
    } finally {
      db.close();
      t.cleanup();
    }
  });
});

describe('replaceRecords', () => {
  const snapshot = snapshotReaderFrom([rec('a'), rec('b'), notOwned(rec('hand')), notOwned(rec('z-hand'))]);
  it('source: carries over records the connector does not own, drops owned ones gone from the export', async () => {
    const cs = await diffRecords([rec('c'), rec('a', { active: false })], snapshot, { ownership: 'source' });
    const body = parsed(replaceRecords(cs, snapshot));
    expect(body.map((r) => r.record_id)).toEqual(['a', 'c', 'hand', 'z-hand']);
    expect(body[0]?.active).toBe(false);
    expect(body.length).toBe(cs.counts.result);
  });
  it('full: the body is the export', async () => {
    const cs = await diffRecords([rec('c')], snapshot, { ownership: 'full' });
    expect([...replaceRecords(cs, snapshot)].map((r) => r.record_id)).toEqual(['c']);
  });
});

describe('diff properties', () => {
  const idArb = fc.constantFrom(...'abcdefghijAB._-:0123'.split('')).chain((a) => fc.constantFrom('', '1', 'x', '.2').map((b) => a + b));
  const recArb = fc.record({ id: idArb, name: fc.constantFrom('n1', 'n2'), active: fc.boolean(), owned: fc.boolean() });
  const uniq = <T extends { id: string }>(xs: T[]): T[] => [...new Map(xs.map((x) => [x.id, x] as const)).values()];

  it('applying the changeset to the snapshot gives the replace body, for both ownership modes', () => {
    fc.assert(
      fc.property(fc.array(recArb, { maxLength: 30 }), fc.array(recArb, { maxLength: 30 }), fc.constantFrom<OwnershipMode>('source', 'full'), (s, src, mode) => {
        const snapSeeds = uniq(s).map((x) => ({ record: rec(x.id, { display_name: x.name, active: x.active }), owned: x.owned }));
        const source = uniq(src).map((x) => rec(x.id, { display_name: x.name, active: x.active }));
        const reader = snapshotReaderFrom(snapSeeds);
        const cs = diffSorted([...source].sort((a, b) => (a.record_id < b.record_id ? -1 : 1)), reader, { ownership: mode });
        const state = new Map(snapSeeds.map((x) => [x.record.record_id, x.record]));
        for (const a of cs.adds) state.set(a.record_id, a);
        for (const c of cs.changes) state.set(c.record_id, { ...state.get(c.record_id)!, ...c.patch });
        for (const d of cs.deletes) state.delete(d.record_id);
        const body = parsed(replaceRecords(cs, reader));
        expect([...state.values()].sort((a, b) => (a.record_id < b.record_id ? -1 : 1))).toEqual(body);
        expect(body.length).toBe(cs.counts.result);
        // not-owned records survive in source mode
        if (mode === 'source') for (const x of snapSeeds) if (!x.owned && !source.some((r) => r.record_id === x.record.record_id)) expect(state.get(x.record.record_id)).toEqual(x.record);
      }),
      { numRuns: 300 },
    );
  });
});
