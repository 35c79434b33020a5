import fc from 'fast-check';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { policySchema, type Policy } from '../../src/config/policy.js';
import { mappingConfigSchema } from '../../src/mapping/config.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { openStateDb, type StateDb } from '../../src/snapshot/db.js';
import type { SnapshotStore } from '../../src/snapshot/store.js';
import { sourceConfigSchema } from '../../src/sources/config.js';
import type { Changeset } from '../../src/sync/core/changeset.js';
import { confirmedParts, diffOptionsOf } from '../../src/sync/core/diff.js';
import { replaceRecords } from '../../src/sync/core/ownership.js';
import { diffSource } from '../../src/sync/disk/diff-source.js';
import { readSource, type SourceRead } from '../../src/sync/executor/source-read.js';
import { stampKept } from '../../src/sync/unchanged/kept-rows.js';
import { keptDigest } from '../../src/sync/unchanged/kept-stamp.js';
import { readAndDiff } from '../../src/sync/unchanged/unchanged-diff.js';
import { tempDir } from './diff-fixtures.js';

/**
 * Issue 18's unchanged rows: a read and diff that takes the rows equal to the last published export's at
 * their place as unchanged must give exactly what the full read and diff gives — the same read (rows, records,
 * row errors, refusal, importability), the same changeset (counts, digest, value tallies, operations) and the
 * same record set a replace sends — whatever happened since: rows modified, inserted, deleted, moved,
 * repeated ids, blank and invalid rows, a header or mapping change, records written by another path, a plan
 * held, or a crash after the rows were kept but before they were stamped. Real files and real SQLite.
 */

let t: ReturnType<typeof tempDir>;
beforeEach(() => {
  t = tempDir();
});
afterEach(() => t.cleanup());

const HEADER = ['SKU', 'Name', 'Price', 'Stock'];
const MAPPINGS = [
  { fields: { record_id: 'SKU', api_value: 'SKU', display_name: 'Name', 'attributes.price': { column: 'Price', transforms: ['number'] }, 'attributes.stock': { column: 'Stock', transforms: ['integer'] } } },
  { fields: { record_id: 'SKU', api_value: 'SKU', display_name: { column: 'Name', transforms: ['uppercase'] }, 'attributes.price': { column: 'Price', transforms: ['number'] } } },
].map((m) => mappingConfigSchema.parse(m));
const SOURCES = [
  sourceConfigSchema.parse({ type: 'csv', on_row_errors: 'skip_rows', max_bad_row_ratio: 1 }),
  sourceConfigSchema.parse({ type: 'csv', on_row_errors: 'reject_file' }),
];

type Row = string[];
type Edit =
  | { k: 'modify'; at: number; col: number; value: string }
  | { k: 'insert'; at: number; id: number }
  | { k: 'delete'; at: number }
  | { k: 'move'; from: number; to: number }
  | { k: 'repeat'; from: number; to: number }
  | { k: 'blank'; at: number }
  | { k: 'short'; at: number }
  | { k: 'swapColumns'; a: number; b: number };
type Other = { k: 'none' } | { k: 'write'; at: number; stock: number } | { k: 'delete'; at: number } | { k: 'rebuild'; extra: number; edit: number };
interface Step {
  edits: Edit[];
  mapping: number;
  source: number;
  /** What became of the plan: published and stamped, held (nothing), published and a crash before the stamp. */
  after: 'publish' | 'hold' | 'crash';
  other: Other;
}

const cell = fc.constantFrom('1', '2.5', 'x', '', 'a,b', 'line\nbreak', 'back\\slash', 'quote"d', ' 7 ', '-3', '1e3');
// Weighted so that most sequences keep some kept rows usable (a repeated id or a header change makes the next read a full one).
const edit: fc.Arbitrary<Edit> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ k: fc.constant('modify' as const), at: fc.nat(), col: fc.integer({ min: 0, max: 3 }), value: cell }) },
  { weight: 4, arbitrary: fc.record({ k: fc.constant('insert' as const), at: fc.nat(), id: fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 100, max: 10_000 }) }, { weight: 1, arbitrary: fc.integer({ min: 0, max: 60 }) }) }) },
  { weight: 4, arbitrary: fc.record({ k: fc.constant('delete' as const), at: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('move' as const), from: fc.nat(), to: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('repeat' as const), from: fc.nat(), to: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('blank' as const), at: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('short' as const), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('swapColumns' as const), a: fc.integer({ min: 0, max: 3 }), b: fc.integer({ min: 0, max: 3 }) }) },
);
const other: fc.Arbitrary<Other> = fc.oneof(
  { weight: 12, arbitrary: fc.constant({ k: 'none' as const }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('write' as const), at: fc.nat(), stock: fc.integer({ min: -5, max: 5 }) }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('delete' as const), at: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('rebuild' as const), extra: fc.integer({ min: 0, max: 2 }), edit: fc.nat() }) },
);
const step: fc.Arbitrary<Step> = fc.record({
  // Mostly a few edits: the unchanged-rows path is taken; sometimes many: it gives up and reads in full.
  edits: fc.oneof({ weight: 4, arbitrary: fc.array(edit, { maxLength: 3 }) }, { weight: 1, arbitrary: fc.array(edit, { maxLength: 25 }) }),
  mapping: fc.oneof({ weight: 9, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constant(1) }),
  source: fc.oneof({ weight: 9, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constant(1) }),
  after: fc.oneof({ weight: 4, arbitrary: fc.constant('publish' as const) }, { weight: 1, arbitrary: fc.constantFrom('hold' as const, 'crash' as const) }),
  other,
});

const first = (n: number): Row[] => Array.from({ length: n }, (_, i) => [`S${i}`, `Item ${i}`, `${i}.5`, `${i % 7}`]);

function apply(rows: Row[], header: string[], e: Edit): void {
  const at = (i: number, extra = 0) => (rows.length + extra === 0 ? 0 : i % (rows.length + extra));
  switch (e.k) {
    case 'modify':
      if (rows.length > 0) rows[at(e.at)]![e.col] = e.value;
      return;
    case 'insert':
      rows.splice(at(e.at, 1), 0, [`S${e.id}`, `New ${e.id}`, '3', '4']);
      return;
    case 'delete':
      if (rows.length > 0) rows.splice(at(e.at), 1);
      return;
    case 'move': {
      if (rows.length === 0) return;
      const [r] = rows.splice(at(e.from), 1);
      rows.splice(at(e.to, 1), 0, r!);
      return;
    }
    case 'repeat':
      if (rows.length > 0) rows[at(e.to)]![0] = rows[at(e.from)]![0]!;
      return;
    case 'blank':
      rows.splice(at(e.at, 1), 0, ['', '', '', '']);
      return;
    case 'short':
      if (rows.length > 0) rows[at(e.at)] = rows[at(e.at)]!.slice(0, 2);
      return;
    case 'swapColumns': {
      const swap = (r: string[]) => ([r[e.a], r[e.b]] = [r[e.b]!, r[e.a]!]);
      swap(header);
      for (const r of rows) if (r.length === 4) swap(r);
      return;
    }
  }
}

const quote = (c: string): string => (/[",\n\r]/.test(c) ? `"${c.replace(/"/g, '""')}"` : c);
const csv = (header: string[], rows: Row[]): string => [header, ...rows].map((r) => r.map(quote).join(',')).join('\n') + '\n';

interface Seen {
  read: unknown;
  changeset: unknown;
}

/** What a read and its changeset say, to compare (no file or folder names, which differ between the two). */
function seen(read: SourceRead, cs: Changeset | null, store: SnapshotStore): Seen {
  const r = { rows: read.rows, records: read.records, rowErrors: read.rowErrors, rejected: read.rejected?.code ?? null, bad: [...(read.badRows?.ids ?? [])].sort(), without: read.badRows?.withoutId, imp: read.importability, hash: read.fileHash };
  if (cs === null) return { read: r, changeset: null };
  const { counts, digest, values, fieldsChanged, foreignEdits, ownership } = cs;
  return {
    read: r,
    changeset: {
      counts,
      digest,
      values,
      fieldsChanged,
      foreignEdits,
      ownership,
      adds: [...cs.addTexts].map((a) => [a.record_id, a.json]),
      changes: [...cs.changes].map((c) => [c.record_id, c.fields, c.record, c.line]),
      deletes: [...cs.deletes],
      adopted: [...cs.adopted],
      replace: [...replaceRecords(cs, store.reader())],
    },
  };
}

describe('unchanged rows (issue 18)', () => {
  it('give exactly the full read and diff through random edit sequences, or take the full path', async () => {
    let fast = 0;
    let later = 0;
    let runs = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 40 }), fc.array(step, { minLength: 2, maxLength: 6 }), fc.constantFrom('source' as const, 'full' as const), fc.constantFrom('overwrite' as const, 'keep' as const), async (n, steps, ownership, onForeignEdit) => {
        const dir = join(t.dir, `run-${runs++}`);
        const keptDir = join(dir, 'kept');
        mkdirSync(keptDir, { recursive: true });
        const policy: Policy = policySchema.parse({ ownership, on_foreign_edit: onForeignEdit });
        const db: StateDb = openStateDb(join(dir, 'state.db'));
        try {
          const store = db.snapshot('ds');
          const header = [...HEADER];
          const rows = first(n);
          let version = 1;
          for (const [i, s] of steps.entries()) {
            for (const e of s.edits) apply(rows, header, e);
            otherWrite(store, s.other, () => ++version);
            const file = join(dir, `export-${i}.csv`);
            writeFileSync(file, csv(header, rows));
            const source = SOURCES[s.source]!;
            const mapping = MAPPINGS[s.mapping]!;
            const workA = join(dir, `full-${i}`);
            const workB = join(dir, `kept-${i}`);
            mkdirSync(workA);
            mkdirSync(workB);
            const full = await readSource(file, source, mapping, workA);
            const fullCs = full.sorted ? await diffSource(full.sorted, store.reader(), diffOptionsOf(policy), join(workA, 'changeset')) : null;
            const kept = await readAndDiff(file, source, mapping, workB, { keptDir, store, policy, maxShare: 0.5 });
            if (i > 0) later++;
            if (kept.path === 'unchanged-rows') fast++;
            else if (process.env['SHOW_REASONS']) console.log(i, kept.reason);
            expect(seen(kept.read, kept.changeset, store), `step ${i} (${kept.path}: ${kept.reason})`).toEqual(seen(full, fullCs, store));
            if (fullCs === null || s.after === 'hold') continue;
            const parts = confirmedParts(fullCs);
            store.confirm({ activeVersion: ++version, upsertTexts: parts.upsertTexts, deletes: parts.deletes, own: parts.own });
            if (s.after === 'publish') stampKept(keptDir, store, store.generation(), keptDigest(source, mapping));
          }
        } finally {
          db.close();
        }
      }),
      { numRuns: 25 },
    );
    // The property is only worth something if the path it checks is taken (the cases below take it for sure).
    expect(fast).toBeGreaterThan(0);
    expect(later).toBeGreaterThan(0);
  }, 120_000);
});

/** Records written by another path than a sync of the export: a confirm of one record's change or deletion, or a rebuild (new records not owned). */
function otherWrite(store: SnapshotStore, o: Other, version: () => number): void {
  if (o.k === 'none') return;
  const records = [...store.reader().entries()].map((e) => JSON.parse(e.json) as DatasetRecord);
  if (o.k === 'rebuild') {
    const rb = store.beginRebuild();
    const edited = records.map((r, i) => (records.length > 0 && i === o.edit % records.length ? { ...r, display_name: `${r.display_name} (portal)` } : r));
    rb.add([...edited, ...Array.from({ length: o.extra }, (_, k): DatasetRecord => ({ record_id: `S${50 + k}`, display_name: 'Theirs', api_value: `S${50 + k}`, aliases: [], attributes: {}, active: true }))]);
    rb.commit(version());
    return;
  }
  if (records.length === 0) return;
  const r = records[o.at % records.length]!;
  if (o.k === 'write') store.confirm({ activeVersion: version(), upserts: [{ ...r, attributes: { ...r.attributes, stock: o.stock } }] });
  else store.confirm({ activeVersion: version(), deletes: [r.record_id] });
}
