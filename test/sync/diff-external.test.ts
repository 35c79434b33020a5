import fc from 'fast-check';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mappingConfigSchema } from '../../src/mapping/config.js';
import type { DatasetRecord, RecordField } from '../../src/model/record.js';
import { openStateDb } from '../../src/snapshot/db.js';
import { recordJson } from '../../src/model/record-json.js';
import { compareIds, snapshotReaderFrom, type SnapshotSeed } from '../../src/model/snapshot-reader.js';
import { sourceConfigSchema } from '../../src/sources/config.js';
import { readExportFile } from '../../src/sources/index.js';
import type { Changeset } from '../../src/sync/core/changeset.js';
import { diffSorted, type DiffOptions } from '../../src/sync/core/diff.js';
import { diffSource } from '../../src/sync/disk/diff-source.js';
import { replaceRecords } from '../../src/sync/core/ownership.js';
import { readSource } from '../../src/sync/executor/source-read.js';
import { SortedSource } from '../../src/sync/disk/sorted-source.js';
import { SourceSorter } from '../../src/sync/disk/source-sorter.js';
import { rec, tempDir } from './diff-fixtures.js';

/**
 * Issue 18: the sync diffs an export sorted on disk against the snapshot, into
 * a changeset on disk. It must give exactly the changeset of the in-memory
 * merge-join (diffSorted), whatever the order of the export, however many runs
 * the sort spills, and in byte order of record_id (A7) even where JavaScript's
 * UTF-16 order disagrees (characters above U+FFFF against U+E000–U+FFFF).
 */

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir();
});
afterEach(() => t.cleanup());

const all = <T>(xs: Iterable<T>): T[] => [...xs];
/** Byte order of UTF-8, independently of compareIds. */
const byBytes = (a: string, b: string): number => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

let n = 0;
/** Sort `records` (given in this order) on disk with runs of `runBytes` bytes (`memoryChars`: kept in memory up to that much, the sorter's default). */
function sorted(records: DatasetRecord[], runBytes: number, memoryChars?: number): { source: SortedSource; dups: Array<[string, number, number]> } {
  const sorter = new SourceSorter(t.dir, runBytes, memoryChars);
  // As readSource adds them: each record with its value flags (the diff counts unchanged records' values from those).
  records.forEach((r, i) => sorter.addRecord(r, i + 2));
  const dups: Array<[string, number, number]> = [];
  const source = sorter.finish((id, line, first) => dups.push([id, line, first]));
  return { source, dups };
}

async function external(records: DatasetRecord[], seeds: SnapshotSeed[], options: DiffOptions, runBytes: number): Promise<Changeset> {
  const { source } = sorted(records, runBytes);
  return diffSource(source, snapshotReaderFrom(seeds), options, join(t.dir, `cs-${++n}`));
}

/** Everything a changeset holds, as plain values. */
function contents(cs: Changeset) {
  return {
    ownership: cs.ownership,
    counts: cs.counts,
    digest: cs.digest,
    foreignEdits: cs.foreignEdits,
    values: cs.values,
    head: cs.head,
    records: all(cs.records),
    adds: all(cs.adds),
    // Without the export line a change read from disk carries for the history (an in-memory diff has no lines).
    changes: all(cs.changes).map(({ line: _line, ...c }) => c),
    deletes: all(cs.deletes),
    adopted: all(cs.adopted),
  };
}

// Ids that sort differently by UTF-16 code unit and by byte: U+1F600 (a surrogate pair) sorts after U+FF01 in bytes, before it in UTF-16.
const ID_PARTS = ['a', 'B', '0', '.', '-', ':', '_', 'z', '\uff01', '\ue000', '\u{1f600}', '\u00e9', 'A-1'];
const idArb = fc.array(fc.constantFrom(...ID_PARTS), { minLength: 1, maxLength: 3 }).map((p) => p.join(''));
const recArb = fc.record({
  id: idArb,
  name: fc.constantFrom('n1', 'n2'),
  stock: fc.constantFrom(0, 1, 2),
  active: fc.boolean(),
  owned: fc.boolean(),
  foreign: fc.constantFrom<RecordField[]>([], ['display_name'], ['attributes']),
});
const uniq = <T extends { id: string }>(xs: T[]): T[] => [...new Map(xs.map((x) => [x.id, x] as const)).values()];
const toRec = (x: { id: string; name: string; stock: number; active: boolean }) => rec(x.id, { display_name: x.name, attributes: { stock: x.stock }, active: x.active });

describe('external diff (sorted runs on disk) against the in-memory merge-join', () => {
  it('gives the same changeset, digest and body for random exports and snapshots, in any order and run size', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(recArb, { maxLength: 40 }),
        fc.array(recArb, { maxLength: 40 }),
        fc.constantFrom<DiffOptions['ownership']>('source', 'full'),
        fc.constantFrom<NonNullable<DiffOptions['onForeignEdit']>>('overwrite', 'keep'),
        fc.constantFrom(1, 40, 400, 1 << 20),
        fc.constantFrom<DiffOptions['values']>(undefined, [{ field: '*', max_zeroed_ratio: 0.25, jump_factor: 10, max_jump_ratio: 0.25, min_compared: 1 }]),
        async (snap, src, ownership, onForeignEdit, runBytes, values) => {
          const seeds: SnapshotSeed[] = uniq(snap).map((x) => ({ record: toRec(x), owned: x.owned, foreignFields: x.owned ? x.foreign : [] }));
          const source = uniq(src).map(toRec); // in arbitrary (file) order
          const options = { ownership, onForeignEdit, values };
          const mem = diffSorted([...source].sort((a, b) => byBytes(a.record_id, b.record_id)), snapshotReaderFrom(seeds), options);
          const ext = await external(source, seeds, options, runBytes);
          expect(contents(ext)).toEqual(contents(mem));
          expect(all(replaceRecords(ext, snapshotReaderFrom(seeds)))).toEqual(all(replaceRecords(mem, snapshotReaderFrom(seeds))));
          // Independently of compareIds: the adds are the new ids in UTF-8 byte order.
          const known = new Set(seeds.map((s) => (s as { record: DatasetRecord }).record.record_id));
          expect(all(ext.adds).map((r) => r.record_id)).toEqual(source.map((r) => r.record_id).filter((id) => !known.has(id)).sort(byBytes));
        },
      ),
      { numRuns: 150 },
    );
  });

  it('compareIds is UTF-8 byte order, also where UTF-16 order differs', () => {
    fc.assert(
      fc.property(idArb, idArb, (a, b) => {
        expect(Math.sign(compareIds(a, b))).toBe(Math.sign(byBytes(a, b)));
      }),
    );
    expect('\u{1f600}' < '\uff01').toBe(true); // UTF-16: the surrogate first
    expect(compareIds('\u{1f600}', '\uff01')).toBe(1); // bytes: F0 9F… after EF BC…
  });

  it('merges more runs than it opens at once (rounds), earliest line first among equal ids', () => {
    const records = Array.from({ length: 300 }, (_, i) => rec(`id-${String((i * 7919) % 250).padStart(3, '0')}`, { display_name: `line ${i + 2}` }));
    const { source, dups } = sorted(records, 1); // a run per record: 300 runs, merged 64 at a time
    const entries = all(source.entries());
    expect(entries.map((e) => e.record_id)).toEqual([...new Set(records.map((r) => r.record_id))].sort());
    // The first occurrence of each id is kept; each later one is reported with the first's line.
    for (const e of entries) expect(e.line).toBe(records.findIndex((r) => r.record_id === e.record_id) + 2);
    expect(dups).toHaveLength(50);
    for (const [id, line, first] of dups) {
      expect(records[line - 2]!.record_id).toBe(id);
      expect(first).toBe(records.findIndex((r) => r.record_id === id) + 2);
    }
    // What is left is the source's own runs (merged in rounds to at most 64, read merged), no id runs.
    expect(readdirSync(t.dir).sort()).toEqual(source.runs.map((r) => r.slice(t.dir.length + 1)).sort());
    expect(source.runs.length).toBeLessThanOrEqual(64);
  });

  it('finds repeats across runs of ids written escaped (a tab, a quote, a backslash) and of non-ASCII ids', () => {
    // Each run's id run is the head of its entry lines: an escaped id must be cut after its field, not at a tab inside it.
    const names = ['a\tb', 'q"x', 'back\\slash', 'Größe-1', '\u{1f600}', 'plain'];
    const records = [...names, ...names.slice().reverse(), 'a\tb'].map((id, i) => rec(id, { display_name: `line ${i + 2}` }));
    const { source, dups } = sorted(records, 1);
    expect(all(source.entries()).map((e) => [e.record_id, e.line])).toEqual(names.slice().sort(byBytes).map((id) => [id, names.indexOf(id) + 2]));
    expect(dups.sort((x, y) => x[1] - y[1])).toEqual([
      ...names.slice().reverse().map((id, k): [string, number, number] => [id, names.length + k + 2, names.indexOf(id) + 2]),
      ['a\tb', 2 * names.length + 2, 2],
    ]);
  });

  it('reports each later occurrence of an id with its first line, whatever the runs, rounds and ids (escaped, non-ASCII, above U+FFFF)', () => {
    // A model of the check: the first occurrence of an id is kept, each later one reported with the first's line.
    const parts = ['a', 'Z', '0', '-', '\t', '"', '\\', '\n', '\u00e9', '\uff01', '\ue000', '\u{1f600}', 'Größe'];
    const ids = fc.array(fc.constantFrom(...parts), { minLength: 1, maxLength: 3 }).map((p) => p.join(''));
    fc.assert(
      fc.property(
        fc.array(ids, { maxLength: 100, size: 'max' }),
        fc.constantFrom(1, 40, 300, 1 << 20),
        fc.constantFrom(0, 200, undefined),
        (list, runBytes, memoryChars) => {
          const records = list.map((id, i) => rec(id, { display_name: `line ${i + 2}` }));
          const { source, dups } = sorted(records, runBytes, memoryChars);
          const first = new Map<string, number>();
          const want: Array<[string, number, number]> = [];
          list.forEach((id, i) => {
            const f = first.get(id);
            if (f === undefined) first.set(id, i + 2);
            else want.push([id, i + 2, f]);
          });
          expect([...dups].sort((x, y) => x[1] - y[1])).toEqual(want);
          // Reported in record_id order, as the in-memory sort reports them.
          expect(dups.map((d) => d[0])).toEqual(want.map((d) => d[0]).sort(byBytes));
          expect(all(source.entries()).map((e) => [e.record_id, e.line])).toEqual([...first].sort((x, y) => byBytes(x[0], y[0])));
          expect(source.count).toBe(first.size);
          // No id run is left behind.
          expect(readdirSync(t.dir).filter((f) => f.endsWith('.ids'))).toEqual([]);
          source.runs.forEach((r) => rmSync(r, { force: true }));
        },
      ),
      { numRuns: 25 },
    );
  });

  it('grows its buffer in place past the first megabyte up to the run size: one run, every entry whole and in order', () => {
    // ~3 MB of entries (non-ASCII names, one record of 2 MB) into a 16 MB run: the buffer starts at 1 MB and grows, never spills.
    const records = Array.from({ length: 6000 }, (_, i) => rec(`g-${String((i * 7919) % 6000).padStart(5, '0')}`, { display_name: `Größe ${'é'.repeat(40)} ${i}` }));
    records[3000] = rec('g-big', { display_name: 'x'.repeat(2_000_000) });
    const { source, dups } = sorted(records, 16 * 1024 * 1024, 0); // not kept in memory
    expect(dups).toEqual([]);
    expect(source.runs).toHaveLength(1);
    const entries = all(source.entries());
    expect(entries.map((e) => e.record_id)).toEqual(records.map((r) => r.record_id).sort(byBytes));
    const byId = new Map(records.map((r) => [r.record_id, recordJson(r)]));
    for (const e of entries) expect(e.json).toBe(byId.get(e.record_id));
    // A run size below what is added still spills (the buffer never grows past it).
    expect(sorted(records.slice(0, 4000), 256 * 1024).source.runs.length).toBeGreaterThan(1);
  });

  it('keeps a small source in memory with the same entries, repeats, counts and flags as its runs on disk, and writes the same run when linked', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(recArb, fc.constantFrom(false, true)), { maxLength: 60 }),
        fc.constantFrom(1, 200, 1 << 20),
        async (rows, runBytes) => {
          // Repeated ids on purpose (the reader leaves finding them to the sort); some entries without flags, as a feed's merge adds them.
          const records = rows.map(([x]) => toRec(x));
          const sort = (memoryChars: number) => {
            const sorter = new SourceSorter(t.dir, runBytes, memoryChars);
            rows.forEach(([, bare], i) => (bare ? sorter.add(records[i]!.record_id, i + 2, recordJson(records[i]!)) : sorter.addRecord(records[i]!, i + 2)));
            const dups: Array<[string, number, number]> = [];
            return { source: sorter.finish((id, line, first) => dups.push([id, line, first])), dups };
          };
          const disk = sort(0);
          const mem = sort(1 << 20);
          // Kept in memory when a third of a run holds it all (and it is under memoryChars): no run file at all until linked.
          if (runBytes === 1 << 20) expect(mem.source.runs).toEqual([]);
          if (runBytes === 1 && rows.length > 0) expect(mem.source.runs.length).toBeGreaterThan(0);
          expect(all(mem.source.entries())).toEqual(all(disk.source.entries()));
          expect(mem.dups.sort((a, b) => a[1] - b[1])).toEqual(disk.dups.sort((a, b) => a[1] - b[1]));
          expect([mem.source.count, mem.source.plain, mem.source.shapes]).toEqual([disk.source.count, disk.source.plain, disk.source.shapes]);
          const [dm, dd] = [join(t.dir, `mem-${++n}`), join(t.dir, `disk-${n}`)];
          for (const d of [dm, dd]) mkdirSync(d);
          mem.source.linkInto(dm);
          disk.source.linkInto(dd);
          // As a plan's changeset folder holds them: one run of the same lines (several only where the disk sort spilled).
          expect(all(SortedSource.inFolder(dm).entries())).toEqual(all(SortedSource.inFolder(dd).entries()));
          if (disk.source.runs.length === 1) expect(readFileSync(join(dm, 'source-0001'), 'utf8')).toBe(readFileSync(join(dd, 'source-0001'), 'utf8'));
        },
      ),
      { numRuns: 100 },
    );
  });

  it('goes on through runs on disk when a source outgrows the memory it may be kept in', () => {
    const records = Array.from({ length: 3000 }, (_, i) => rec(`m-${String((i * 7919) % 2500).padStart(5, '0')}`, { display_name: `Größe ${i}` }));
    const mem = sorted(records, 16 * 1024 * 1024, 20_000); // ~200 entries fit, then the rest goes to the buffer and its runs
    const disk = sorted(records, 16 * 1024 * 1024, 0);
    expect(mem.source.runs).toHaveLength(1);
    expect(all(mem.source.entries())).toEqual(all(disk.source.entries()));
    expect(mem.dups).toEqual(disk.dups);
    expect(mem.dups).toHaveLength(500);
    expect(mem.source.count).toBe(2500);
  });

  it('diffs a sorted export against the SQLite snapshot reader and reads the changeset back from disk', async () => {
    const db = openStateDb(join(t.dir, 'state.db'));
    try {
      const s = db.snapshot('shop');
      const ids = (k: number) => `r${String(k).padStart(5, '0')}`;
      s.confirm({ activeVersion: 1, upserts: Array.from({ length: 2500 }, (_, k) => rec(ids(k))) });
      const src = Array.from({ length: 2600 }, (_, k) => rec(ids(2599 - k), k === 2589 ? { active: false } : {})).filter((r) => r.record_id !== ids(7));
      const { source } = sorted(src, 4096);
      const cs = await diffSource(source, s.reader(), { ownership: 'source' }, join(t.dir, 'cs'));
      expect(cs.counts).toMatchObject({ adds: 100, changes: 1, deletes: 1, unchanged: 2498, snapshot: 2500 });
      expect(all(cs.changes).map((c) => [c.record_id, c.patch])).toEqual([[ids(10), { active: false }]]);
      expect(all(cs.deletes)).toEqual([{ record_id: ids(7), owned: true }]);
      expect(all(cs.adds).map((r) => r.record_id)).toEqual(Array.from({ length: 100 }, (_, k) => ids(2500 + k)));
      expect(cs.head.adds).toHaveLength(100);
      expect(existsSync(join(t.dir, 'cs', 'source-0001'))).toBe(true);
    } finally {
      db.close();
    }
  });

  it('counts values from the flags in the runs only with the shapes of the sort that wrote them: runs found in a folder, or lines without flags, are read as text', async () => {
    const options: DiffOptions = { ownership: 'source', values: [{ field: '*', max_zeroed_ratio: 0.25, jump_factor: 10, max_jump_ratio: 0.25, min_compared: 1 }] };
    const at = (stock: number | null, price: number) => ({ attributes: { stock, price } });
    const snap = [rec('a', at(5, 1)), rec('b', at(0, 2)), rec('c', at(3, 0)), rec('d', at(null, 4)), rec('e', at(7, 9))];
    // a, b, d, e unchanged (counted from their flags), c zeroed; e's attributes in another key order (another shape).
    const src = [rec('a', at(5, 1)), rec('b', at(0, 2)), rec('c', at(0, 0)), rec('d', at(null, 4)), rec('e', { attributes: { price: 9, stock: 7 } })];
    const mem = diffSorted(src, snapshotReaderFrom(snap), options);
    // Every compared record had a price (zeroable); all but c's 0 are non-zero. Stocks: a, c, e had a value to lose.
    expect(mem.values?.fields['attributes.stock']).toMatchObject({ changed: 1, zeroed: 1, zeroable: 3, nonzero: 3 });

    const { source } = sorted([...src].reverse(), 200); // several runs, merged as read
    expect(source.runs.length).toBeGreaterThan(1);
    expect(source.shapes).toEqual([['price', 'stock'], ['stock', 'price']]); // e was added first
    // Shape, then display_name, api_value, aliases (empty: 0), active, then the attributes in the shape's order.
    expect(all(source.entries()).map((e) => e.flags)).toEqual(['1.110133', '1.110103', '1.110100', '1.110103', '0.110133']);
    const withFlags = await diffSource(source, snapshotReaderFrom(snap), options, join(t.dir, 'cs-flags'));

    // The same runs as a plan's changeset folder holds them: their flags without the shapes, so read as text.
    const found = SortedSource.inFolder(join(t.dir, 'cs-flags'));
    expect(found.shapes).toEqual([]);
    expect(all(found.entries()).every((e) => e.flags !== undefined)).toBe(true);
    const fromFolder = await diffSource(found, snapshotReaderFrom(snap), options, join(t.dir, 'cs-folder'));

    // The same entries without flags (an entry line as written before them, a restore's or a feed's).
    const bare = new SourceSorter(t.dir, 200);
    [...src].reverse().forEach((r, i) => bare.add(r.record_id, i + 2, recordJson(r)));
    const noFlags = bare.finish(() => undefined);
    expect(all(noFlags.entries()).every((e) => e.flags === undefined)).toBe(true);
    const fromText = await diffSource(noFlags, snapshotReaderFrom(snap), options, join(t.dir, 'cs-text'));

    for (const cs of [withFlags, fromFolder, fromText]) expect(contents(cs)).toEqual(contents(mem));
  });
});

describe('repeated record_ids found by the sort (the reader keeps no set of keys)', () => {
  const mapping = mappingConfigSchema.parse({ fields: { record_id: 'SKU', display_name: 'Name', api_value: 'Code' } });
  // Every 10th row repeats an earlier SKU; one row is bad (empty name).
  const csv = ['SKU,Name,Code', ...Array.from({ length: 200 }, (_, i) => `S${i % 10 === 9 ? i - 5 : i},${i === 50 ? '' : `Item ${i}`},c${i}`)].join('\n');

  for (const on_row_errors of ['skip_rows', 'reject_file'] as const) {
    it(`gives the reader's own verdict, row errors and records (${on_row_errors}), over many runs`, async () => {
      const file = join(t.dir, `export-${on_row_errors}.csv`);
      writeFileSync(file, csv);
      const source = sourceConfigSchema.parse({ type: 'csv', on_row_errors, max_bad_row_ratio: 0.5, max_row_errors_kept: 15 });
      const ref = await readExportFile(file, source, mapping); // with the in-memory key index
      const got = await readSource(file, source, mapping, t.dir, { runBytes: 300 });
      const held = await readSource(file, source, mapping, t.dir); // small enough to be sorted in memory
      expect(held.sorted?.runs ?? []).toEqual([]);
      expect({ ...held, sorted: held.sorted && all(held.sorted.entries()) }).toEqual({ ...got, sorted: got.sorted && all(got.sorted.entries()) });
      expect(got.rejected?.code ?? null).toBe(ref.rejected?.code ?? null);
      expect(got.rowErrors).toEqual(ref.row_errors);
      expect(got.rows).toBe(ref.counts.rows);
      if (ref.rejected) {
        expect(got.sorted).toBeNull();
        return;
      }
      expect(got.records).toBe(ref.records.length);
      const want = new Map(ref.records.map((r, i) => [r.record_id, { line: ref.lines[i], json: recordJson(r) }] as const));
      const entries = all(got.sorted!.entries());
      expect(entries.map((e) => e.record_id)).toEqual([...want.keys()].sort(byBytes));
      for (const e of entries) expect({ line: e.line, json: e.json }).toEqual(want.get(e.record_id));
      expect(got.sorted!.linesOf(['S3', 'S4', 'nope'])).toEqual(new Map([['S3', 5], ['S4', 6]]));
    });
  }
});
