import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { policySchema } from '../../src/config/policy.js';
import { mappingConfigSchema, type MappingConfig } from '../../src/mapping/config.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import type { SnapshotStore } from '../../src/snapshot/store.js';
import { sourceConfigSchema, type SourceConfig } from '../../src/sources/config.js';
import { confirmedParts } from '../../src/sync/core/diff.js';
import { stampKept } from '../../src/sync/unchanged/kept-rows.js';
import { keptDigest } from '../../src/sync/unchanged/kept-stamp.js';
import { readAndDiff } from '../../src/sync/unchanged/unchanged-diff.js';
import { tempDir } from './diff-fixtures.js';

/**
 * fx18c (review rv18c D1): a row the mapping's filters leave out is kept as such (`f`), and the same row at its place
 * in the next export is taken as filtered out again without mapping, under the same stamp and settings digest as a
 * record's row; a row that was filtered and no longer is, a filter changed, and a bad row under skip_rows are not.
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

const fields = { record_id: 'SKU', api_value: 'SKU', display_name: 'Name', 'attributes.stock': { column: 'Stock', transforms: ['integer'] } };
const skipNoImg = mappingConfigSchema.parse({ fields, filters: { skip_when_empty: ['Img'] } });
const csv = sourceConfigSchema.parse({ type: 'csv', on_row_errors: 'skip_rows', max_bad_row_ratio: 0.5 });
const policy = policySchema.parse({});

interface Row {
  stock: string;
  img: string;
}
/** 40 rows, every fourth without an image (filtered out by skip_when_empty: Img). */
const rows: Row[] = Array.from({ length: 40 }, (_, i) => ({ stock: String(i), img: i % 4 === 0 ? '' : 'img' }));

function write(list: Row[]): string {
  const file = join(t.dir, `export-${n++}.csv`);
  writeFileSync(file, ['SKU,Name,Stock,Img', ...list.map((r, i) => `S${i},Item ${i},${r.stock},${r.img}`)].join('\n') + '\n');
  return file;
}

/** Read and diff, publish what it found, stamp the rows kept. */
async function sync(list: Row[], mapping: MappingConfig = skipNoImg, source: SourceConfig = csv) {
  const work = join(t.dir, `work-${n++}`);
  mkdirSync(work);
  const r = await readAndDiff(write(list), source, mapping, work, { keptDir, store, policy });
  if (r.changeset === null) throw new Error('refused');
  const parts = confirmedParts(r.changeset);
  store.confirm({ activeVersion: (store.state().activeVersion ?? 0) + 1, upsertTexts: parts.upsertTexts, deletes: parts.deletes, own: parts.own });
  stampKept(keptDir, store, store.generation(), keptDigest(source, mapping));
  const c = r.changeset.counts;
  return { path: r.path, reason: r.reason, differing: r.differing, counts: { rows: r.read.rows, records: r.read.records, filtered: r.read.rows - r.read.records - (r.read.badRows ? r.read.badRows.ids.size + r.read.badRows.withoutId : 0), row_errors: r.read.rowErrors.length }, adds: c.adds, changes: c.changes, deletes: c.deletes };
}

describe('unchanged rows: rows the filters leave out', () => {
  it('the same export again: its filtered rows are unchanged, none differs, and the counts are the full read', async () => {
    const first = await sync(rows);
    expect(first).toMatchObject({ path: 'full', counts: { rows: 40, filtered: 10, records: 30 } });
    expect(await sync(rows)).toMatchObject({ path: 'unchanged-rows', reason: null, differing: 0, counts: { rows: 40, filtered: 10, records: 30 }, adds: 0, changes: 0, deletes: 0 });
  });

  it('a row filtered before and given an image now is mapped: its record is added', async () => {
    await sync(rows);
    await sync(rows);
    const next = rows.map((r, i) => (i === 8 ? { ...r, img: 'img' } : r));
    expect(await sync(next)).toMatchObject({ path: 'unchanged-rows', differing: 1, counts: { filtered: 9, records: 31 }, adds: 1, changes: 0, deletes: 0 });
  });

  it('a record whose image is emptied is filtered out now: its record is deleted', async () => {
    await sync(rows);
    const next = rows.map((r, i) => (i === 9 ? { ...r, img: '' } : r));
    expect(await sync(next)).toMatchObject({ path: 'unchanged-rows', differing: 1, counts: { filtered: 11, records: 29 }, adds: 0, deletes: 1 });
  });

  it('the filter settings changed, the bytes the same: read in full, and the rows filtered before become records', async () => {
    await sync(rows);
    const noFilter = mappingConfigSchema.parse({ fields });
    expect(await sync(rows, noFilter)).toMatchObject({ path: 'full', reason: 'the source or mapping settings changed since the last publish', counts: { filtered: 0, records: 40 }, adds: 10 });
  });

  it('a bad row under skip_rows is mapped and reported at every read, beside unchanged filtered rows', async () => {
    const bad = rows.map((r, i) => (i === 5 ? { ...r, stock: 'lots' } : r));
    await sync(bad);
    for (let k = 0; k < 2; k++) {
      expect(await sync(bad)).toMatchObject({ path: 'unchanged-rows', differing: 1, counts: { rows: 40, filtered: 10, records: 29, row_errors: 1 }, changes: 0, deletes: 0 });
    }
  });
});
