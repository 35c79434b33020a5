import { chmodSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { NEVER_FOLLOW, hashFile } from '../../src/sources/open-file.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { copyPrivately, loadPlan, savePlan } from '../../src/sync/executor/plan-files.js';
import type { SyncPlan } from '../../src/sync/core/plan.js';
import { tempDir } from './diff-fixtures.js';
import { recs, scenario, type Scenario } from './harness.js';

/**
 * Plan files and upload copies hold the shop's records: whoever writes them
 * (daemon or CLI, under any umask) makes the plan folder 0700 and each file
 * 0600, as openStateDb does for the state db. An existing folder keeps its mode.
 */

const mode = (path: string) => statSync(path).mode & 0o777;

/** A minimal plan (only its id and dataset matter to the plan file functions). */
const plan = (id: string) => ({ id, dataset: 'shop-1', changeset: { ownership: 'source', counts: {}, digest: 'd', foreignEdits: [], head: { adds: [], changes: [], deletes: [] } } }) as unknown as SyncPlan;


let t: ReturnType<typeof tempDir>;
let umask: number;
let s: Scenario | undefined;
beforeEach(() => {
  t = tempDir();
  umask = process.umask(0o022); // the usual permissive umask of a shell
});
afterEach(async () => {
  await s?.close();
  s = undefined;
  process.umask(umask);
  t.cleanup();
});

describe('plan files are private whatever the umask', () => {
  it('savePlan makes the folder (and a parent it needs) 0700 and the plan file 0600', () => {
    const dir = join(t.dir, 'var', 'state.db.plans');
    savePlan(dir, plan('p1'));
    expect({ parent: mode(join(t.dir, 'var')), dir: mode(dir), file: mode(join(dir, 'p1.json')) }).toEqual({ parent: 0o700, dir: 0o700, file: 0o600 });
    // The lists of a changeset live in its folder beside the plan file; without it the plan cannot be run.
    expect(loadPlan(dir, 'p1')).toBeNull();
    mkdirSync(join(dir, 'p1.changeset'));
    expect(loadPlan(dir, 'p1')?.plan.id).toBe('p1');
  });

  it('a leftover temp file of another mode (a crash mid-write) does not lend the plan its mode', () => {
    const dir = join(t.dir, 'state.db.plans');
    mkdirSync(dir, { mode: 0o700 });
    writeFileSync(join(dir, 'p2.json.tmp'), 'half a plan');
    chmodSync(join(dir, 'p2.json.tmp'), 0o644);
    savePlan(dir, plan('p2'));
    expect(mode(join(dir, 'p2.json'))).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['p2.json']);
  });

  it('an upload copy is hashed while it is copied: copyPrivately returns the SHA-256 of the bytes it wrote, one pass', async () => {
    const dir = join(t.dir, 'state.db.plans');
    const exported = join(t.dir, 'big.csv');
    // Several stream chunks, so the hash is of every chunk in order, not of the first.
    writeFileSync(exported, 'SKU,Name\n' + Array.from({ length: 40_000 }, (_, i) => `S${i},Item ${i}`).join('\n') + '\n');
    const copy = join(dir, 'p4.upload');
    const sha = await copyPrivately(exported, copy);
    expect(sha).toBe(createHash('sha256').update(readFileSync(copy)).digest('hex'));
    expect(sha).toBe(await hashFile(exported, NEVER_FOLLOW));
  });

  it('an existing folder keeps the mode the operator chose; the files in it are 0600', async () => {
    const dir = join(t.dir, 'state.db.plans');
    mkdirSync(dir);
    chmodSync(dir, 0o750);
    savePlan(dir, plan('p3'));
    const exported = join(t.dir, 'export.csv');
    writeFileSync(exported, 'SKU,Name\nA,Apple\n');
    chmodSync(exported, 0o644);
    await copyPrivately(exported, join(dir, 'p3.upload'));
    expect({ dir: mode(dir), plan: mode(join(dir, 'p3.json')), upload: mode(join(dir, 'p3.upload')) }).toEqual({ dir: 0o750, plan: 0o600, upload: 0o600 });
    expect(readFileSync(join(dir, 'p3.upload'), 'utf8')).toBe('SKU,Name\nA,Apple\n');
  });

  it('an upload sync keeps its plan, its changeset, its sorted export and its copy of the export (a 0644 file) 0600 in 0700 folders', async () => {
    let seen: Record<string, number> | null = null;
    // Every file and folder under the plan folder, by kind: plan.json, the changeset's files, the sync's scratch folder.
    const kinds = (dir: string, prefix = ''): Array<[string, number]> =>
      readdirSync(dir).flatMap((n): Array<[string, number]> => {
        const path = join(dir, n);
        const kind = prefix + (n.startsWith('work.') ? 'work.*' : n.replace(/-\d+$/, '-*').replace(/^plan-.*\./, '*.'));
        return statSync(path).isDirectory() ? [[`${kind}/`, mode(path)], ...kinds(path, `${kind}/`)] : [[kind, mode(path)]];
      });
    s = await scenario({
      records: recs(30),
      policy: { replace: { max_per_record_changes: 2, job_poll_ms: 100 } },
      // While the upload is sent, the plan file and the copy of the export are both there.
      onRequest: (e) => {
        if (e.method !== 'POST' || !e.path.endsWith('/imports')) return;
        const dir = join(s!.dir, 'state.db.plans');
        seen = Object.fromEntries([['(folder)', mode(dir)], ...kinds(dir)]);
      },
    });
    expect((await s.engine.sync(s.ds, { file: await s.writeExport(recs(30)) })).result).toBe('unchanged'); // adopt
    const renamed = await s.writeExport(recs(30).map((r) => ({ ...r, display_name: `New ${r.record_id}` })));
    chmodSync(renamed, 0o644);
    expect(await s.engine.sync(s.ds, { file: renamed })).toMatchObject({ result: 'published', path: 'import' });
    const changeset = Object.fromEntries(['source-*', 'adds', 'changes', 'deletes', 'adopted', 'desired', 'dataset'].map((f) => [f, 0o600]));
    expect(seen).toEqual({
      '(folder)': 0o700,
      '*.json': 0o600,
      '*.upload': 0o600,
      '*.changeset/': 0o700,
      ...Object.fromEntries(Object.entries(changeset).map(([f, m]) => [`*.changeset/${f}`, m])),
      // The sync's scratch folder: a small export is sorted in memory, no runs in it (the changeset's source-* is
      // written from memory then; a large export's runs are linked there, written by the same openPrivate).
      'work.*/': 0o700,
      // Issue 18 (on by default): this export's rows, kept for the next read once this plan is published.
      'unchanged-rows.shop-*/': 0o700,
      'unchanged-rows.shop-*/kept-rows.next': 0o600,
      'unchanged-rows.shop-*/kept-rows.next.sha256': 0o600,
    });
  });

  it('files of a plan a crash left before it was journaled are removed by the next sync of its dataset, not of another', async () => {
    s = await scenario({ records: recs(3) });
    expect((await s.engine.sync(s.ds, { file: await s.writeExport(recs(3)) })).result).toBe('unchanged');
    const dir = join(s.dir, 'state.db.plans');
    // A changeset moved beside its plan file-to-be, and a plan file whose journal row was never written.
    mkdirSync(join(dir, 'plan-orphan-a.changeset'), { mode: 0o700 });
    writeFileSync(join(dir, 'plan-orphan-a.changeset', 'dataset'), 'shop-1');
    writeFileSync(join(dir, 'plan-orphan-b.json'), JSON.stringify({ planId: 'plan-orphan-b', dataset: 'shop-1' }));
    mkdirSync(join(dir, 'plan-other.changeset'), { mode: 0o700 });
    writeFileSync(join(dir, 'plan-other.changeset', 'dataset'), 'shop-2');
    // Leftover scratch of a sync that crashed while reading.
    mkdirSync(join(dir, 'work.shop-1.0123456789ab'), { mode: 0o700 });
    mkdirSync(join(dir, 'work.shop-2.0123456789ab'), { mode: 0o700 });
    expect((await s.engine.sync(s.ds, { file: await s.writeExport(recs(3)) })).result).toBe('unchanged');
    // The dataset's copy of its last published export (issue 18) is no plan's: it stays for the next read.
    expect(readdirSync(dir).sort()).toEqual(['plan-other.changeset', 'unchanged-rows.shop-1', 'work.shop-2.0123456789ab']);
  });

  it('a plan a sync left open before issue 12 (an ExecPlan file, its changeset inline) is resumed after the upgrade and published once', async () => {
    s = await scenario({ records: recs(3) });
    expect((await s.engine.sync(s.ds, { file: await s.writeExport(recs(3)) })).result).toBe('unchanged');
    const active = s.em.emulator.describe('shop-1').active_version;
    const counts = { source: 4, snapshot: 3, snapshotOwned: 3, adds: 1, changes: 0, deletes: 0, unchanged: 3, adopted: 0, owned: 4, notOwned: 0, notOwnedDeletes: 0, deletable: 3, result: 4 };
    const [added] = recs(1, 4);
    const old = {
      planId: 'plan-before-12', dataset: 'shop-1', path: 'per_record', direct: false, stageOnly: false,
      baseVersion: active, baseEtag: `"v${active}"`, baseCount: 3, resultCount: 4,
      changeset: { ownership: 'source', counts, digest: 'd', foreignEdits: [], records: recs(4), adds: [added], changes: [], deletes: [], adopted: [] },
      expected: { added: 1, changed: 0, deleted: 0 }, configFlags: {}, heldBy: null, requiredFlags: {},
      source: { fileHash: 'ab'.repeat(32), rowCount: 4, at: 0 }, file: null, createdAt: 0,
    };
    const dir = join(s.dir, 'state.db.plans');
    writeFileSync(join(dir, 'plan-before-12.json'), JSON.stringify(old), { mode: 0o600 });
    s.db.journal.beginPlan('shop-1', { planId: 'plan-before-12', path: 'per_record', summary: { counts: old.expected } });
    expect(await s.engine.resume(s.ds)).toMatchObject({ result: 'published' });
    expect(s.published().map((r) => r.record_id)).toEqual(recs(4).map((r) => r.record_id));
    expect(s.em.emulator.counters.recordWrites).toBe(1);
    expect(s.db.snapshot('shop-1').info()).toMatchObject({ recordCount: 4, ownedCount: 4 });
    expect(s.db.journal.plan('plan-before-12')).toMatchObject({ status: 'finished', outcome: 'published' });
    expect(readdirSync(dir).filter((n) => n.startsWith('plan-'))).toEqual([]);
  });
});
