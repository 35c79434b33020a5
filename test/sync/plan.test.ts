import { describe, expect, it } from 'vitest';
import type { DatasetRecord } from '../../src/model/record.js';
import { snapshotReaderFrom, type SnapshotSeed } from '../../src/model/snapshot-reader.js';
import type { Changeset } from '../../src/sync/core/changeset.js';
import { diffSorted } from '../../src/sync/core/diff.js';
import { planSync as planWith, type KeyRole, type PlanInputs, type PlanSnapshotInfo, type PlanSource, type SyncPath } from '../../src/sync/core/plan.js';
import { policySchema, type Policy } from '../../src/config/policy.js';
import { rec, recs } from './diff-fixtures.js';

const ALL: KeyRole[] = ['read', 'write', 'replace', 'publish'];
/** A key that has shown that it stages on both kinds of request (the decisions below are the policy's alone). */
const STAGES = { records: 'stages', jobs: 'stages' } as const;

/** planSync with the inputs these cases vary; the rest fixed. */
function planSync(
  cs: Changeset,
  snapshot: PlanSnapshotInfo,
  roles: readonly KeyRole[],
  pol: Policy,
  rateBudget: { ratePerMinute: number },
  o: { id?: string; source?: PlanSource | undefined; extra?: Partial<PlanInputs> } = {},
) {
  return planWith({
    dataset: 'shop-1',
    changeset: cs,
    snapshot,
    key: { roles, shown: STAGES },
    policy: pol,
    rateBudget,
    planDir: '/state.db.plans',
    now: 1_700_000_000_000,
    ...(o.source ? { source: o.source } : {}),
    ...(o.id ? { id: o.id } : {}),
    ...o.extra,
  });
}

/** A changeset over `owned` owned records (+ `hand` not owned): `adds` new, `changes` changed, `deletes` owned records removed. */
function changeset(o: { owned?: number; hand?: number; adds?: number; changes?: number; deletes?: number; ownership?: 'source' | 'full'; keep?: boolean }): Changeset {
  const owned = recs(o.owned ?? 100);
  const hand = recs(o.hand ?? 0, 'h');
  const snapshot: SnapshotSeed[] = [...owned, ...hand.map((record) => ({ record, owned: false }))];
  const source: DatasetRecord[] = owned
    .slice(o.deletes ?? 0)
    .map((r, i) => (i < (o.changes ?? 0) ? { ...r, display_name: 'changed' } : r))
    .concat(recs(o.adds ?? 0, 'n'));
  source.sort((a, b) => (a.record_id < b.record_id ? -1 : 1));
  const cs = diffSorted(source, snapshotReaderFrom(snapshot), { ownership: o.ownership ?? 'source' });
  // A foreign edit of an owned record whose server fields are kept (on_foreign_edit: keep).
  if (o.keep) cs.foreignEdits.push({ record_id: owned[0]!.record_id, fields: ['display_name'], resolution: 'keep' });
  return cs;
}

const info = (over: Partial<PlanSnapshotInfo> = {}): PlanSnapshotInfo => ({ activeVersion: 5, etag: '"v5"', lastSource: null, lastJob: null, ...over });
const policy = (over: Record<string, unknown> = {}): Policy => policySchema.parse(over);

interface Case {
  name: string;
  cs: Parameters<typeof changeset>[0];
  roles?: KeyRole[];
  policy?: Record<string, unknown>;
  info?: Partial<PlanSnapshotInfo>;
  rate?: number;
  source?: { importable?: boolean; notImportableReason?: string; rowCount?: number; fileBytes?: number };
  path: SyncPath;
  staging?: boolean;
  publishBy?: 'connector' | 'person' | 'none';
  held?: string[];
  blocked?: boolean;
  reason?: RegExp;
  flags?: { allow_mass_delete: boolean; allow_empty: boolean };
}

// Crossover at 100/min (0.6 s a request), staged (+2 requests), job 10 s estimated, polled every 1 s:
// replace = 3 × 0.6 + 10 = 11.8 s; per-record = (ops + 2) × 0.6 → 17 ops 11.4 s, 18 ops 12.0 s.
const cases: Case[] = [
  { name: 'nothing changed', cs: {}, path: 'none', publishBy: 'none', reason: /equals the source/ },
  { name: 'crossover: 17 changes stay per-record', cs: { changes: 17 }, path: 'per_record', staging: true, publishBy: 'connector', reason: /per-record 11\.4 s ≤ replace 11\.8 s/ },
  { name: 'crossover: 18 changes go to a replace', cs: { changes: 18 }, path: 'replace', reason: /replace 11\.8 s < per-record 12\.0 s/ },
  { name: 'a faster rate moves the crossover', cs: { changes: 18 }, rate: 120, path: 'per_record' },
  { name: 'a measured slow job moves the crossover', cs: { changes: 30 }, info: { lastJob: { ms: 60_000, records: 100 } }, path: 'per_record', reason: /measured/ },
  { name: 'a measured fast job scales with records', cs: { changes: 10 }, info: { lastJob: { ms: 100, records: 1000 } }, path: 'replace' },
  { name: 'max_per_record_changes forces a replace', cs: { changes: 5 }, policy: { replace: { max_per_record_changes: 4 } }, path: 'replace', reason: /max_per_record_changes/ },
  { name: 'no replace role: per-record however large', cs: { changes: 90 }, roles: ['read', 'write', 'publish'], path: 'per_record', reason: /no replace role/ },
  { name: 'no write role: replace however small', cs: { changes: 1 }, roles: ['read', 'replace', 'publish'], path: 'replace', reason: /no write role/ },
  { name: 'neither write nor replace: blocked', cs: { changes: 1 }, roles: ['read', 'publish'], path: 'none', blocked: true, reason: /neither the write nor the replace role/ },
  { name: 'no publish role: staged, a person publishes', cs: { changes: 2 }, roles: ['read', 'write', 'replace'], path: 'per_record', staging: true, publishBy: 'person', reason: /person must publish/ },
  { name: 'direct publish of small changes', cs: { changes: 3 }, policy: { direct_publish_max_changes: 3 }, path: 'per_record', staging: false, publishBy: 'connector', reason: /direct publish/ },
  { name: 'direct publish cap exceeded: staged', cs: { changes: 4 }, policy: { direct_publish_max_changes: 3 }, path: 'per_record', staging: true },
  { name: 'staging off: direct', cs: { changes: 3 }, policy: { staging: false }, path: 'per_record', staging: false },
  { name: 'staging off, replace publishes in the job', cs: { changes: 60 }, policy: { staging: false }, path: 'replace', staging: false },
  { name: 'importable file, all owned: import', cs: { changes: 60 }, source: { importable: true }, path: 'import', reason: /POST \/imports/ },
  { name: 'importable but records to carry over: PUT', cs: { changes: 60, hand: 3 }, source: { importable: true }, path: 'replace', reason: /not an upload: 3 records not owned by the connector must be carried over/ },
  { name: 'not importable: PUT with the reader\'s reason', cs: { changes: 60 }, source: { importable: false, notImportableReason: 'the mapping filters rows' }, path: 'replace', reason: /PUT \/records, not an upload: the mapping filters rows/ },
  { name: 'kept foreign edits: PUT', cs: { changes: 60, keep: true }, source: { importable: true }, policy: { on_foreign_edit: 'keep' }, path: 'replace', reason: /on_foreign_edit: keep/ },
  { name: 'importable, full ownership: import', cs: { changes: 60, hand: 3, ownership: 'full' }, source: { importable: true }, policy: { ownership: 'full', guards: { max_delete_ratio: 0.4 } }, path: 'import' },
  { name: 'prefer_import off: PUT', cs: { changes: 60 }, source: { importable: true }, policy: { replace: { prefer_import: false } }, path: 'replace' },
  { name: 'carrying over needs page reads first', cs: { changes: 15, hand: 2000 }, path: 'per_record', reason: /3 page reads/ },
  // guards
  { name: 'max_delete_ratio holds at 21%', cs: { deletes: 21 }, path: 'replace', staging: true, publishBy: 'person', held: ['max_delete_ratio'], reason: /held for a person.*21\.0%/ },
  { name: 'max_delete_ratio passes at 20%', cs: { deletes: 20 }, path: 'replace', held: [] },
  { name: 'ratio counts only deletable (owned) records', cs: { owned: 10, hand: 90, deletes: 3 }, path: 'per_record', held: ['max_delete_ratio'], reason: /90 records not owned/ },
  { name: 'allow_mass_delete lets it pass and sends the flag over half', cs: { deletes: 60 }, policy: { guards: { allow_mass_delete: true } }, path: 'replace', publishBy: 'connector', held: [], flags: { allow_mass_delete: true, allow_empty: false } },
  { name: 'max_deletes', cs: { deletes: 6 }, policy: { guards: { max_deletes: 5 } }, path: 'per_record', held: ['max_deletes'] },
  { name: 'min_records', cs: { deletes: 2 }, policy: { guards: { min_records: 99 } }, path: 'per_record', held: ['min_records'] },
  { name: 'empty result holds', cs: { owned: 3, deletes: 3 }, policy: { guards: { max_delete_ratio: 0.49, allow_mass_delete: true } }, path: 'per_record', held: ['empty_result'] },
  { name: 'allow_empty lets an empty result through with the flag', cs: { owned: 3, deletes: 3 }, policy: { guards: { allow_mass_delete: true, allow_empty: true } }, path: 'per_record', held: [], flags: { allow_mass_delete: true, allow_empty: true } },
  { name: 'row count drop against the last export', cs: { adds: 1 }, info: { lastSource: { fileHash: 'x', rowCount: 200, at: 0 } }, source: { rowCount: 101 }, policy: { guards: { max_row_drop_ratio: 0.3 } }, path: 'per_record', held: ['max_row_drop_ratio'], reason: /drop 49\.5%/ },
  { name: 'row drop within the limit', cs: { adds: 1 }, info: { lastSource: { fileHash: 'x', rowCount: 120, at: 0 } }, source: { rowCount: 101 }, policy: { guards: { max_row_drop_ratio: 0.3 } }, path: 'per_record', held: [] },
  { name: 'full ownership deletes hand-made records within the guards', cs: { owned: 90, hand: 10, ownership: 'full' }, policy: { ownership: 'full' }, path: 'per_record', held: [] },
  { name: 'full ownership: too many hand-made deletes hold', cs: { owned: 70, hand: 30, ownership: 'full' }, policy: { ownership: 'full' }, path: 'replace', held: ['max_delete_ratio'] },
];

describe('planSync (table)', () => {
  for (const c of cases) {
    it(c.name, () => {
      const plan = planSync(changeset(c.cs), info(c.info), c.roles ?? ALL, policy(c.policy), { ratePerMinute: c.rate ?? 100 }, { source: c.source });
      expect(plan.path, plan.reason).toBe(c.path);
      if (c.staging !== undefined) expect(plan.publish.staging).toBe(c.staging);
      if (c.publishBy) expect(plan.publish.publishBy).toBe(c.publishBy);
      if (c.held) {
        expect(plan.guards.results.filter((r) => r.holds).map((r) => r.guard)).toEqual(c.held);
        expect(plan.held).toBe(c.held.length > 0);
        if (c.held.length) expect(plan.publish).toMatchObject({ staging: true, publishBy: 'person' });
      }
      expect(plan.blocked !== null).toBe(c.blocked ?? false);
      if (c.reason) expect(plan.reason).toMatch(c.reason);
      expect(plan.publish.options).toEqual(c.flags ?? { allow_mass_delete: false, allow_empty: false });
      const ops = plan.counts.adds + plan.counts.changes + plan.counts.deletes;
      expect(plan.operations.length).toBe(plan.path === 'per_record' ? ops : 0);
      expect(plan.replace !== null).toBe(plan.path === 'replace' || plan.path === 'import');
      if (plan.replace) expect(plan.replace.options.publish).toBe(!plan.publish.staging);
      expect(JSON.parse(JSON.stringify(plan))).toEqual(plan); // serialisable
    });
  }
});

describe('planSync', () => {
  it('is pure: same inputs, same plan and id; a different base version, a different id', () => {
    const cs = changeset({ changes: 3 });
    const a = planSync(cs, info(), ALL, policy(), { ratePerMinute: 100 });
    expect(planSync(cs, info(), ALL, policy(), { ratePerMinute: 100 })).toEqual(a);
    expect(planSync(cs, info({ activeVersion: 6 }), ALL, policy(), { ratePerMinute: 100 }).id).not.toBe(a.id);
    expect(planSync(cs, info(), ALL, policy(), { ratePerMinute: 100 }, { id: 'mine' }).id).toBe('mine');
  });

  it('lists operations as POST records, PATCH only changed fields, DELETE ids', () => {
    const cs = diffSorted([rec('a', { display_name: 'A!' }), rec('c')], snapshotReaderFrom([rec('a'), rec('b')]), { ownership: 'source' });
    const plan = planSync(cs, info(), ALL, policy({ guards: { max_delete_ratio: 0.49 } }), { ratePerMinute: 100 });
    expect(plan.operations).toEqual([
      { op: 'add', record_id: 'c', record: rec('c') },
      { op: 'change', record_id: 'a', fields: ['display_name'], patch: { display_name: 'A!' }, record: rec('a', { display_name: 'A!' }) },
      { op: 'delete', record_id: 'b' },
    ]);
  });

  it('shows owned and not-owned counts and the carried-over records of a replace', () => {
    const plan = planSync(changeset({ changes: 60, hand: 7, adds: 2 }), info(), ALL, policy(), { ratePerMinute: 100 });
    expect(plan.counts).toMatchObject({ owned: 102, notOwned: 7, result: 109 });
    expect(plan.replace).toEqual({ records: 109, fromSource: 102, carriedOver: 7, options: { publish: false, allow_mass_delete: false, allow_empty: false } });
  });

  it('never sets the mass-delete flag itself without the explicit opt-in', () => {
    const plan = planSync(changeset({ deletes: 60 }), info(), ALL, policy({ guards: { max_delete_ratio: 0.49 } }), { ratePerMinute: 100 });
    expect(plan.held).toBe(true);
    expect(plan.guards.requiredFlags.allow_mass_delete).toBe(true);
    expect(plan.publish.options.allow_mass_delete).toBe(false);
    expect(plan.replace?.options.allow_mass_delete).toBe(false);
  });

  it('a plan made again at another time is another plan; a fall-back names the plan it replaces', () => {
    const cs = changeset({ changes: 3 });
    const a = planSync(cs, info(), ALL, policy(), { ratePerMinute: 100 });
    const b = planSync(cs, info(), ALL, policy(), { ratePerMinute: 100 }, { extra: { now: 1_700_000_000_001, supersedes: a.id } });
    expect(b.id).not.toBe(a.id);
    expect([a.supersedes, b.supersedes]).toEqual([null, a.id]);
  });

  it('decides with what the key has shown (issue 11, A12): held and unproven → unsent; a key that publishes → direct writes', () => {
    const held = planSync(changeset({ deletes: 60 }), info(), ALL, policy({ guards: { max_delete_ratio: 0.49 } }), { ratePerMinute: 100 }, { extra: { key: { roles: ALL, shown: { records: null, jobs: null } } } });
    expect(held).toMatchObject({ held: true, unsent: true, direct: false, keyShown: null });
    expect(held.reason).toMatch(/kept unsent until approved/);
    const legacy = planSync(changeset({ changes: 3 }), info(), ALL, policy(), { ratePerMinute: 100 }, { extra: { key: { roles: ALL, shown: { records: 'publishes', jobs: null } } } });
    expect(legacy).toMatchObject({ path: 'per_record', unsent: false, direct: true, keyShown: 'publishes' });
    const only = planSync(changeset({ changes: 3 }), info(), ALL, policy({ staging: false }), { ratePerMinute: 100 }, { extra: { stageOnly: true } });
    expect(only).toMatchObject({ stageOnly: true, direct: false, unsent: false });
  });

  it('an import plan names its upload copy beside the plan file, with the fields the reader found', () => {
    const source: PlanSource = {
      file: '/exports/items.csv', fileHash: 'ab'.repeat(32), rowCount: 102, importable: true,
      uploadFields: { mapping: { record_id: 'sku' }, encoding: 'utf-8' }, headerLine: 1,
    };
    const plan = planSync(changeset({ changes: 60, adds: 2 }), info(), ALL, policy(), { ratePerMinute: 100 }, { source });
    expect(plan.path).toBe('import');
    expect(plan.upload).toEqual({
      path: `/state.db.plans/${plan.id}.upload`, filename: 'items.csv', contentType: 'text/csv', sha256: source.fileHash, mapping: { record_id: 'sku' }, encoding: 'utf-8',
    });
    expect(plan.source).toEqual({ fileHash: source.fileHash, rowCount: 102, at: 1_700_000_000_000 });
  });
});
