import { afterEach, describe, expect, it } from 'vitest';
import { rec, recs, scenario, type Scenario } from './harness.js';

/**
 * Issue 12: `plan` and `sync` run the same held gate (src/sync/core/gate.ts),
 * `plan` acting on nothing. Each row leaves a held change or a pending draft,
 * then asks `plan` and `sync` about the same export: the stop `plan` prints
 * is the one the sync ends with, and where `plan` sees no stop the sync goes
 * past the gate.
 */

interface Case {
  name: string;
  policy?: Record<string, unknown>;
  /** The key has not yet shown that it stages, so a guard's hold is kept unsent (A12). */
  untaught?: true;
  /** From a dataset adopted at r-001…r-010 (and taught with r-011 unless untaught): leave the state the gate decides on; returns the export then planned and synced. */
  arrange: (s: Scenario) => Promise<string>;
  /** What both say: the stop, or null (past the gate: the sync's result). */
  stop: { result: string; code: string } | null;
  sync: string;
}

const held = async (s: Scenario) => {
  const file = await s.writeExport(recs(6));
  expect((await s.engine.sync(s.ds, { file })).result).toBe('held');
  return file;
};
const portalStage = (s: Scenario) => s.em.emulator.portalDraft('shop-1', { upsert: [rec('hand-1', 'Seasonal', 'seasonal')] });

const cases: Case[] = [
  {
    name: 'held unsent, then someone else stages a draft, and a newer export comes: it waits on that draft',
    untaught: true,
    arrange: async (s) => {
      await held(s);
      portalStage(s);
      return s.writeExport(recs(12));
    },
    stop: { result: 'waiting', code: 'DRAFT_PENDING' },
    sync: 'waiting',
  },
  { name: 'held by a guard, the same export again: held', arrange: held, stop: { result: 'held', code: 'HELD_GUARD' }, sync: 'held' },
  {
    name: 'held by a guard, a newer export: it replaces the held change',
    arrange: async (s) => {
      await held(s);
      return s.writeExport(recs(12));
    },
    stop: null,
    sync: 'published',
  },
  {
    name: 'held by a guard, then published by a person: settled, the same export plans',
    arrange: async (s) => {
      const file = await held(s);
      const st = s.em.emulator.dataset('shop-1');
      st.activate(st.pendingDraft(s.em.emulator.clock.now())!);
      return file;
    },
    stop: null,
    sync: 'unchanged',
  },
  {
    name: 'a draft someone else staged, on_foreign_draft wait',
    arrange: async (s) => {
      portalStage(s);
      return s.writeExport(recs(12));
    },
    stop: { result: 'waiting', code: 'DRAFT_PENDING' },
    sync: 'waiting',
  },
  {
    name: 'a draft someone else staged, on_foreign_draft discard',
    policy: { on_foreign_draft: 'discard' },
    arrange: async (s) => {
      portalStage(s);
      return s.writeExport(recs(12));
    },
    stop: null,
    sync: 'published',
  },
];

let s: Scenario | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

describe('plan and sync stop at the same held gate (issue 12)', () => {
  for (const c of cases) {
    it(c.name, async () => {
      const sc = (s = await scenario({ records: recs(10), ...(c.policy ? { policy: c.policy } : {}) }));
      expect((await sc.engine.sync(sc.ds, { file: await sc.writeExport(recs(10)) })).result).toBe('unchanged');
      // A first change shows that the key stages, so a guard's hold is a draft on the server.
      if (!c.untaught) expect((await sc.engine.sync(sc.ds, { file: await sc.writeExport(recs(11)) })).result).toBe('published');
      const file = await c.arrange(sc);
      const discards = sc.em.emulator.counters.discards;

      const preview = await sc.engine.plan(sc.ds, file);
      expect(sc.em.emulator.counters.discards).toBe(discards); // plan acts on nothing
      const sum = await sc.engine.sync(sc.ds, { file });

      expect(sum.result, sum.message ?? '').toBe(c.sync);
      if (c.stop) {
        expect(preview.stopped).toMatchObject(c.stop);
        expect(preview.plan).toBeNull();
        expect(sum).toMatchObject({ ...c.stop, message: preview.stopped!.message });
      } else {
        expect(preview.stopped).toBeNull();
        expect(preview.plan).not.toBeNull();
      }
    });
  }
});
