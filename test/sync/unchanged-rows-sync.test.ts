import { existsSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { onCrashPoint } from '../../src/sync/executor/crash-hook.js';
import { planDir } from '../../src/sync/executor/plan-files.js';
import { openKept } from '../../src/sync/unchanged/kept-rows.js';
import { keptDigest, STAMP_FILE } from '../../src/sync/unchanged/kept-stamp.js';
import { keptDirOf } from '../../src/sync/unchanged/sync-kept.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { policySchema } from '../../src/config/policy.js';
import { mappingConfigSchema } from '../../src/mapping/config.js';
import { recs, scenario, type Scenario } from './harness.js';

/**
 * Issue 18 wired into the sync (policy unchanged_rows): the export is read through the kept rows of the last
 * published export only while those rows are the snapshot's records; every way the records or the published
 * export can move on without this read's plan being published whole must leave the next read a full one.
 */

let s: Scenario;
afterEach(async () => {
  onCrashPoint(null);
  await s?.close();
});

const N = 100;
const edited = (rows: DatasetRecord[], at: number, name: string) => rows.map((r, i) => (i === at ? { ...r, display_name: name } : r));
const plannedRead = () => s.logs.filter((l) => l.event === 'sync.planned' && l.planId !== undefined).at(-1)?.read;
const keptDir = () => keptDirOf(planDir(s.db.path), 'shop-1');
/** The stamp is usable now (the kept rows would be read as the published export's). */
const stampValid = () => !('reason' in openKept(keptDir(), s.db.snapshot('shop-1').recordsMark(), keptDigest(s.ds.source, s.ds.mapping)));

async function published(policy: Record<string, unknown> = {}): Promise<DatasetRecord[]> {
  s = await scenario({ policy: { unchanged_rows: true, ...policy } });
  const all = recs(N);
  const first = await s.engine.sync(s.ds, { file: await s.writeExport(all) });
  expect(first).toMatchObject({ result: 'published', adds: N, read: { path: 'full', reason: expect.stringMatching(/first sync/) } });
  expect(stampValid()).toBe(true);
  return all;
}

const nameOf = (id: string) => s.published().find((r) => r.record_id === id)?.display_name;

describe('unchanged rows in the sync', () => {
  it('a second export with one row edited takes the unchanged rows and publishes exactly that change', async () => {
    const all = await published();
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(edited(all, 41, 'Edited')) });
    expect(sum).toMatchObject({ result: 'published', rows: N, adds: 0, changes: 1, deletes: 0, read: { path: 'unchanged-rows', reason: null } });
    expect(plannedRead()).toBe('unchanged-rows');
    expect(nameOf('r-042')).toBe('Edited');
    expect(s.published()).toHaveLength(N);
    // Stamped again with this export: the same file once more is all unchanged rows, nothing to send.
    const again = await s.engine.sync(s.ds, { file: await s.writeExport(edited(all, 41, 'Edited')) });
    expect(again).toMatchObject({ result: 'unchanged', read: { path: 'unchanged-rows' } });
  });

  it('a plan held by the delete guard is not the published export: discarded, the same file again is held again, not unchanged', async () => {
    const all = await published({ guards: { max_deletes: 5 } });
    const fewer = all.slice(0, N - 10);
    const held = await s.engine.sync(s.ds, { file: await s.writeExport(fewer) });
    expect(held).toMatchObject({ result: 'held', deletes: 10 });
    expect(await s.engine.discard(s.ds)).toMatchObject({ action: 'discarded' });
    const again = await s.engine.sync(s.ds, { file: await s.writeExport(fewer) });
    expect(again).toMatchObject({ result: 'held', deletes: 10 });
    expect(s.published()).toHaveLength(N);
  });

  it('an approved held plan voids the kept rows: the next export is read in full and publishes exactly its change', async () => {
    const all = await published({ guards: { max_deletes: 5 } });
    const fewer = all.slice(0, N - 10);
    expect(await s.engine.sync(s.ds, { file: await s.writeExport(fewer) })).toMatchObject({ result: 'held' });
    expect(await s.engine.approve(s.ds)).toMatchObject({ action: 'published' });
    expect(s.published()).toHaveLength(N - 10);
    expect(stampValid()).toBe(false);
    const next = await s.engine.sync(s.ds, { file: await s.writeExport(edited(fewer, 3, 'After approve')) });
    expect(next).toMatchObject({ result: 'published', adds: 0, changes: 1, deletes: 0, read: { path: 'full' } });
    expect(next.read?.reason).toMatch(/records changed since/);
    expect(nameOf('r-004')).toBe('After approve');
    expect(s.published()).toHaveLength(N - 10);
  });

  it('a portal edit between two syncs of the same file is overwritten (adopted after the kept read: diffed again in full)', async () => {
    const all = await published();
    const file = await s.writeExport(all);
    s.em.emulator.portalPublish('shop-1', { upsert: [{ ...all[7]!, display_name: 'Portal' }] });
    const sum = await s.engine.sync(s.ds, { file });
    expect(sum).toMatchObject({ result: 'published', changes: 1, read: { path: 'full' } });
    expect(nameOf('r-008')).toBe(all[7]!.display_name);
  });

  it('a restore between syncs voids the kept rows: the last export again publishes its change again', async () => {
    const all = await published();
    const v1 = s.em.emulator.dataset('shop-1').activeVersion;
    const edit = edited(all, 9, 'Edited');
    expect(await s.engine.sync(s.ds, { file: await s.writeExport(edit) })).toMatchObject({ result: 'published', read: { path: 'unchanged-rows' } });
    expect(await s.engine.restore(s.ds, { version: v1 })).toMatchObject({ result: 'published' });
    expect(nameOf('r-010')).toBe(all[9]!.display_name);
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(edit) });
    expect(sum).toMatchObject({ result: 'published', changes: 1, read: { path: 'full' } });
    expect(nameOf('r-010')).toBe('Edited');
  });

  it('a crash between the confirm and the stamp leaves no usable stamp: the next export is read in full', async () => {
    const all = await published();
    onCrashPoint((step) => {
      if (step === 'kept.stamp') throw new Error('killed between confirm and stamp');
    });
    await s.engine.sync(s.ds, { file: await s.writeExport(edited(all, 0, 'One')) });
    onCrashPoint(null);
    expect(nameOf('r-001')).toBe('One');
    s.restart();
    expect(stampValid()).toBe(false);
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(edited(edited(all, 0, 'One'), 1, 'Two')) });
    expect(sum).toMatchObject({ result: 'published', changes: 1, read: { path: 'full' } });
    expect(nameOf('r-002')).toBe('Two');
    expect(existsSync(join(keptDir(), STAMP_FILE))).toBe(true);
  });

  it('a stamp that cannot be written leaves the sync published (only the next read goes the full way)', async () => {
    const all = await published();
    // A link at the stamp's .tmp into a folder that is not there, put just before the stamp is written (a directory
    // there is removed first): the write fails ENOENT, as a full disk fails ENOSPC.
    onCrashPoint((step) => {
      if (step === 'kept.stamp') symlinkSync(join(s.dir, 'no-such-folder', 'stamp'), join(keptDir(), `${STAMP_FILE}.tmp`));
    });
    let sum;
    try {
      sum = await s.engine.sync(s.ds, { file: await s.writeExport(edited(all, 2, 'Published')) });
    } finally {
      onCrashPoint(null);
    }
    expect(sum).toMatchObject({ result: 'published', changes: 1, read: { path: 'unchanged-rows' } });
    expect(s.logs.some((l) => l.kind === 'kept_rows' && typeof l.error === 'string')).toBe(true);
    expect(stampValid()).toBe(false);
    expect(nameOf('r-003')).toBe('Published');
  });

  it('by default: the first sync, a mapping change, a connector upgrade and a restore each read in full and say why plainly', async () => {
    s = await scenario({});
    const all = recs(N);
    const first = await s.engine.sync(s.ds, { file: await s.writeExport(all) });
    expect(first).toMatchObject({ result: 'published', read: { path: 'full', reason: expect.stringMatching(/normal on a dataset's first sync/) } });
    expect(plannedRead()).toBe('full');
    expect(await s.engine.sync(s.ds, { file: await s.writeExport(edited(all, 1, 'Kept')) })).toMatchObject({ read: { path: 'unchanged-rows', reason: null } });
    // The mapping: display_name upper-cased from now on; every record changes, as a full read finds.
    const mapping = mappingConfigSchema.parse({ fields: { record_id: 'SKU', display_name: { column: 'Name', transforms: ['uppercase'] }, api_value: 'Code' } });
    const upper = { ...s.ds, mapping, feeds: { main: { ...s.ds.feeds.main!, mapping } } };
    const changed = await s.engine.sync(upper, { file: await s.writeExport(edited(all, 1, 'Kept')) });
    expect(changed).toMatchObject({ result: 'published', changes: N, read: { path: 'full', reason: 'the source or mapping settings changed since the last publish' } });
    expect(nameOf('r-002')).toBe('KEPT');
    // An upgrade: the stamp names the version that wrote it.
    const stampPath = join(keptDir(), STAMP_FILE);
    writeFileSync(stampPath, JSON.stringify({ ...JSON.parse(readFileSync(stampPath, 'utf8')), version: '0.0.1' }));
    const up = edited(edited(all, 1, 'Kept'), 2, 'Upgraded');
    const upgraded = await s.engine.sync(upper, { file: await s.writeExport(up) });
    expect(upgraded).toMatchObject({ result: 'published', changes: 1, read: { path: 'full', reason: 'the connector was upgraded since the last publish' } });
    // A restore writes the records: the next export is read in full, and the reason names it among the causes.
    const v = s.em.emulator.dataset('shop-1').activeVersion;
    expect(await s.engine.sync(upper, { file: await s.writeExport(edited(up, 3, 'Later')) })).toMatchObject({ result: 'published', changes: 1, read: { path: 'unchanged-rows' } });
    expect(await s.engine.restore(upper, { version: v })).toMatchObject({ result: 'published' });
    const after = await s.engine.sync(upper, { file: await s.writeExport(edited(up, 3, 'Later')) });
    expect(after).toMatchObject({ result: 'published', changes: 1, read: { path: 'full', reason: expect.stringMatching(/records changed since the last sync \(.*a restore/) } });
    expect(nameOf('r-004')).toBe('LATER');
  });

  it('policy unchanged_rows false reads in full, says so, and removes a copy kept before', async () => {
    const all = await published();
    expect(existsSync(keptDir())).toBe(true);
    const sum = await s.engine.sync({ ...s.ds, policy: policySchema.parse({ unchanged_rows: false }) }, { file: await s.writeExport(edited(all, 4, 'Off')) });
    expect(sum).toMatchObject({ result: 'published', changes: 1, read: { path: 'full', reason: 'turned off in policy (unchanged_rows: false)' } });
    expect(existsSync(keptDir())).toBe(false);
  });

  it('a staged sync (publish false) does not stamp', async () => {
    const all = await published();
    const file = await s.writeExport(edited(all, 5, 'Staged'));
    expect(await s.engine.sync(s.ds, { file }, { publish: false })).toMatchObject({ result: 'staged' });
    expect(stampValid()).toBe(true);
    expect(await s.engine.discard(s.ds)).toMatchObject({ action: 'discarded' });
    expect(await s.engine.sync(s.ds, { file })).toMatchObject({ result: 'published', changes: 1 });
    expect(nameOf('r-006')).toBe('Staged');
  });
});
