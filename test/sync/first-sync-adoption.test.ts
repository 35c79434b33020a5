import { afterEach, describe, expect, it } from 'vitest';
import type { DatasetRecord } from '../../src/model/record.js';
import { ids, rec, scenario, type Scenario } from './harness.js';

let s: Scenario;
afterEach(async () => s?.close());

/** S001…S100, made in the portal before the connector's first run. */
const shop = Array.from({ length: 100 }, (_, i) => rec(`S${String(i + 1).padStart(3, '0')}`));
/** The first export: every one of them, three changed. */
const firstExport = shop.map((r, i): DatasetRecord => (i < 3 ? { ...r, display_name: `Renamed ${r.record_id}` } : r));
const without = (records: DatasetRecord[], from: number, to: number) => records.filter((_, i) => i + 1 < from || i + 1 > to);

const PATHS: Array<{ name: string; opts: Parameters<typeof scenario>[0] }> = [
  { name: 'staged per-record', opts: {} },
  { name: 'direct (staging: false)', opts: { policy: { staging: false } } },
  { name: 'direct (under direct_publish_max_changes)', opts: { policy: { direct_publish_max_changes: 5 } } },
  { name: 'legacy key, per-record', opts: { legacy: true } },
  { name: 'replace', opts: { policy: { replace: { max_per_record_changes: 0, prefer_import: false } } } },
  { name: 'import', opts: { policy: { replace: { max_per_record_changes: 0 } } } },
  { name: 'legacy key, replace', opts: { legacy: true, policy: { replace: { max_per_record_changes: 0, prefer_import: false } } } },
];

describe('issue 11.1: the first sync adopts every overlapping record, whatever path publishes it', () => {
  for (const { name, opts } of PATHS) {
    it(`${name}: later deletions are planned and guarded`, async () => {
      s = await scenario({ records: shop, ...opts });
      const first = await s.engine.sync(s.ds, { file: await s.writeExport(firstExport) });
      expect(first.result, JSON.stringify(first)).toBe('published');
      expect(s.db.snapshot('shop-1').info()).toMatchObject({ recordCount: 100, ownedCount: 100 });
      if (name === 'import') expect(first.path).toBe('import');

      // Seven discontinued products: deleted (7 % of what the connector owns, within the guard).
      const second = await s.engine.sync(s.ds, { file: await s.writeExport(without(firstExport, 91, 97)) });
      expect(second, JSON.stringify(second)).toMatchObject({ result: 'published', deletes: 7 });
      expect(ids(s.published())).toEqual(ids(without(firstExport, 91, 97)));

      // An export that drops 69 % of the rest: the mass-delete guard holds it, nothing of it is live.
      const kept = without(firstExport, 91, 97).slice(0, 29);
      const third = await s.engine.sync(s.ds, { file: await s.writeExport(kept) });
      expect(third, JSON.stringify(third)).toMatchObject({ result: 'held', code: 'HELD_GUARD', deletes: 64 });
      expect(s.published()).toHaveLength(93);
    });
  }
});
