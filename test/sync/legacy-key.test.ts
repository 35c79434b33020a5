import { afterEach, describe, expect, it } from 'vitest';
import { Secret } from '../../src/secret.js';
import type { KeyChannel } from '../../src/snapshot/types.js';
import { ids, rec, recs, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => s?.close());

const writes = (sc: Scenario) => sc.em.emulator.requests.filter((r) => r.method !== 'GET');
const keyWarnings = (sc: Scenario) => sc.logs.filter((l) => l.event === 'key.warning' && l.kind === 'legacy_key');
const shown = (sc: Scenario, key: string, channel: KeyChannel) => sc.db.snapshot('shop-1').keyShown(new Secret(key).fingerprint(), channel);
const REPLACE = { replace: { max_per_record_changes: 0, prefer_import: false } };
const IMPORT = { replace: { max_per_record_changes: 0 } };

/**
 * Issue 11.2 (A12): a change a guard holds, or one to stage only, is never sent
 * through a key that has not shown that it stages; approve sends it.
 */
describe('a key that has not shown that it stages never sends a held or stage-only change', () => {
  it('per-record, legacy key not known yet: the held delete sends nothing; approve sends it and learns; known legacy: unsent; within the guards: direct', async () => {
    s = await scenario({ records: recs(10), legacy: true });
    expect((await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) })).result).toBe('unchanged'); // adopts; nothing shown
    // 3 of 10 deleted: over max_delete_ratio 0.2, under the server's half. Issue 11: the first staged DELETE used to go out and be published.
    const file = await s.writeExport(recs(7));
    s.em.emulator.clearRequests();
    const held = await s.engine.sync(s.ds, { file });
    expect(writes(s)).toEqual([]);
    expect(s.published()).toHaveLength(10);
    expect(held).toMatchObject({ result: 'held', code: 'HELD_GUARD' });
    expect(held.message).toMatch(/has not yet shown that it stages record writes/);
    expect(s.engine.status(s.ds).held).toMatchObject({ kind: 'guard', version: null });
    expect(s.logs.filter((l) => l.event === 'guard.held' && l.kind === 'unsent')).toHaveLength(1);

    // The same export again sends nothing.
    s.em.emulator.clearRequests();
    expect((await s.engine.sync(s.ds, { file })).result).toBe('held');
    expect(writes(s)).toEqual([]);

    // A person approves: sent; the first write shows the key publishes (legacy), the rest go directly.
    const ok = await s.engine.approve(s.ds);
    expect(ok.action).toBe('published');
    expect(ids(s.published())).toEqual(ids(recs(7)));
    expect(shown(s, s.key, 'records')).toBe('publishes');
    expect(s.db.snapshot('shop-1').info()).toMatchObject({ recordCount: 7, activeVersion: s.em.emulator.describe('shop-1').active_version });
    expect(s.engine.status(s.ds).held).toBeNull();

    // Known legacy from now on: a held change is not sent at all; discard drops it.
    s.logs.length = 0;
    s.em.emulator.clearRequests();
    const next = await s.engine.sync(s.ds, { file: await s.writeExport(recs(5)) });
    expect(next).toMatchObject({ result: 'held', code: 'HELD_GUARD' });
    expect(next.message).toMatch(/publishes record writes at once/);
    expect(writes(s)).toEqual([]);
    expect(keyWarnings(s)).toHaveLength(1);
    expect(await s.engine.discard(s.ds)).toMatchObject({ action: 'discarded', version: null });
    expect(writes(s)).toEqual([]);
    expect(s.published()).toHaveLength(7);

    // A change within the guards goes out as direct writes (no 412 against a stale base).
    s.em.emulator.clearRequests();
    const small = await s.engine.sync(s.ds, { file: await s.writeExport([...recs(7), rec('new-1')]) });
    expect(small.result).toBe('published');
    expect(writes(s).map((r) => [r.method, r.status, r.query.publish ?? null])).toEqual([['POST', 201, null]]);
  });

  it('--no-publish: kept unsent while the key has not shown that it stages; staged as a draft once it has', async () => {
    s = await scenario({ records: recs(5) });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(5)) });
    s.em.emulator.clearRequests();
    const unsent = await s.engine.sync(s.ds, { file: await s.writeExport(recs(6)) }, { publish: false });
    expect(unsent).toMatchObject({ result: 'staged', code: 'HELD_STAGED' });
    expect(writes(s)).toEqual([]);
    expect(s.engine.status(s.ds).held).toMatchObject({ kind: 'staged', version: null });
    // Approve sends and publishes it; its staged write shows the key stages.
    expect((await s.engine.approve(s.ds)).action).toBe('published');
    expect(ids(s.published())).toEqual(ids(recs(6)));
    expect(shown(s, s.key, 'records')).toBe('stages');

    const staged = await s.engine.sync(s.ds, { file: await s.writeExport(recs(7)) }, { publish: false });
    expect(staged).toMatchObject({ result: 'staged' });
    const draft = s.em.emulator.describe('shop-1').draft_version;
    expect(draft).not.toBeNull();
    expect(s.engine.status(s.ds).held).toMatchObject({ kind: 'staged', version: draft });
    expect(s.published()).toHaveLength(6);
  });

  it('staging: false: the first change of a key not known yet goes staged and teaches; later ones go directly', async () => {
    for (const legacy of [false, true]) {
      s = await scenario({ records: recs(5), legacy, policy: { staging: false } });
      const first = await s.engine.sync(s.ds, { file: await s.writeExport(recs(6)) });
      expect(first.result).toBe('published');
      expect(writes(s)[0]).toMatchObject({ method: 'POST', query: { publish: 'false' } });
      expect(shown(s, s.key, 'records')).toBe(legacy ? 'publishes' : 'stages');
      s.em.emulator.clearRequests();
      expect((await s.engine.sync(s.ds, { file: await s.writeExport(recs(7)) })).result).toBe('published');
      expect(writes(s).map((r) => [r.method, r.query.publish ?? null])).toEqual([['POST', null]]);
      expect(ids(s.published())).toEqual(ids(recs(7)));
      await s.close();
    }
  });

  for (const legacyJobs of ['publish', 'stage'] as const) {
    for (const [path, policy] of [['replace', REPLACE], ['import', IMPORT]] as const) {
      it(`${path}, legacy key, jobs ${legacyJobs === 'publish' ? 'published (A12 read broadly)' : 'staged (A12 read narrowly)'}: a held job is never sent before the key has shown that its jobs stage`, async () => {
        s = await scenario({ records: recs(10), legacy: true, policy });
        s.em.emulator.configure({ legacyJobs });
        await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) });
        // 6 of 10 deleted: over the connector's guard and the server's half. Issue 11: the job went out and a server could publish it.
        s.em.emulator.clearRequests();
        const held = await s.engine.sync(s.ds, { file: await s.writeExport(recs(4)) });
        expect(writes(s)).toEqual([]);
        expect(s.published()).toHaveLength(10);
        expect(held).toMatchObject({ result: 'held', code: 'HELD_GUARD', path });
        expect(held.message).toMatch(/has not yet shown that it stages replace and upload jobs/);

        // Approve sends it with the flag it needs, whatever the server does with options.publish.
        const ok = await s.engine.approve(s.ds);
        expect(ok).toMatchObject({ action: 'published', flags: { allow_mass_delete: true, allow_empty: false } });
        expect(ids(s.published())).toEqual(ids(recs(4)));
        expect(s.db.snapshot('shop-1').info()).toMatchObject({ recordCount: 4, ownedCount: 4 });
        expect(shown(s, s.key, 'jobs')).toBe(legacyJobs === 'publish' ? 'publishes' : 'stages');

        // The next held change: unsent where the key's jobs publish; a draft where they stage. Never live.
        s.em.emulator.clearRequests();
        const again = await s.engine.sync(s.ds, { file: await s.writeExport(recs(1)) });
        expect(again).toMatchObject({ result: 'held', code: 'HELD_GUARD' });
        expect(s.published()).toHaveLength(4);
        if (legacyJobs === 'publish') {
          expect(writes(s)).toEqual([]);
          expect(s.engine.status(s.ds).held).toMatchObject({ version: null });
        } else {
          expect(s.engine.status(s.ds).held?.version).toBe(s.em.emulator.describe('shop-1').draft_version);
          expect(await s.engine.discard(s.ds)).toMatchObject({ action: 'discarded' });
        }
        // The key's record writes have shown nothing: a held per-record change stays unsent either way.
        s.em.emulator.clearRequests();
        const perRecord = await s.engine.sync({ ...s.ds, policy: { ...s.ds.policy, replace: { ...s.ds.policy!.replace, max_per_record_changes: undefined } } } as typeof s.ds, {
          file: await s.writeExport(recs(3)),
        });
        expect(perRecord).toMatchObject({ result: 'held', path: 'per_record' });
        expect(writes(s)).toEqual([]);
        expect(s.published()).toHaveLength(4);
      });
    }
  }

  it('a reissued key has to show it again: its first held change is kept unsent, a change within the guards teaches it', async () => {
    s = await scenario({ records: recs(9) });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) }); // one staged add: the key stages
    const draftHeld = await s.engine.sync(s.ds, { file: await s.writeExport(recs(7)) });
    expect(draftHeld).toMatchObject({ result: 'held' });
    expect(s.engine.status(s.ds).held?.version).not.toBeNull();
    await s.engine.discard(s.ds);

    const k2 = s.em.emulator.reissueKey({ key: s.key, graceMs: 0 }).key;
    s.useKey(k2);
    s.em.emulator.clearRequests();
    const unsent = await s.engine.sync(s.ds, { file: await s.writeExport(recs(6)) });
    expect(unsent).toMatchObject({ result: 'held' });
    expect(writes(s)).toEqual([]);
    expect(s.engine.status(s.ds).held).toMatchObject({ version: null });
    expect(shown(s, k2, 'records')).toBeNull();
    expect(shown(s, s.key, 'records')).toBe('stages'); // the old key's, by fingerprint: never the key itself

    await s.engine.discard(s.ds);
    expect((await s.engine.sync(s.ds, { file: await s.writeExport([...recs(10), rec('r-011')]) })).result).toBe('published');
    expect(shown(s, k2, 'records')).toBe('stages');
    expect(await s.engine.sync(s.ds, { file: await s.writeExport(recs(7)) })).toMatchObject({ result: 'held' });
    expect(s.engine.status(s.ds).held?.version).not.toBeNull();
    const rows = s.db.conn.prepare('SELECT key_id FROM key_staging').pluck().all() as string[];
    expect(rows.some((r) => r.includes(s.key) || r.includes(k2))).toBe(false);
  });

  it('a held change on its way through a key that has shown it stages is not sent on with a key read again after a 401', async () => {
    // The key at the source after a 401 is a legacy key (an old file put back): it has shown nothing.
    let k2: string | undefined;
    let deletes = 0;
    s = await scenario({
      records: recs(9),
      rereadKey: () => k2,
      onRequest: (e) => {
        if (e.method === 'DELETE' && e.path.includes('/records/') && e.status === 200) deletes++;
        // Revoked after the first staged delete and the check of its draft: the 401 meets the second delete.
        if (deletes === 1 && k2 === undefined && e.method === 'GET' && /\/versions\/\d+$/.test(e.path)) {
          k2 = s.em.emulator.addKey({ dataset: 'shop-1', legacy: true });
          s.em.emulator.revokeKey(s.key);
        }
      },
    });
    await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) }); // the key stages
    s.em.emulator.clearRequests();
    const held = await s.engine.sync(s.ds, { file: await s.writeExport(recs(7)) });
    expect(held).toMatchObject({ result: 'held', code: 'HELD_GUARD' });
    expect(writes(s).filter((r) => r.method === 'DELETE' && r.path.includes('/records/')).map((r) => r.status)).toEqual([200, 401]);
    const byK2 = writes(s).filter((r) => r.keyFingerprint !== s.em.emulator.requests[0]!.keyFingerprint);
    expect(byK2.filter((r) => r.path.includes('/records'))).toEqual([]); // the second delete did not go out again with the new key
    expect(s.published()).toHaveLength(10);
    expect(s.em.emulator.describe('shop-1').draft_version).toBeNull(); // the one staged delete was discarded
    expect(s.engine.status(s.ds).held).toMatchObject({ kind: 'guard', version: null });
  });
});
