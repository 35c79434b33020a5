import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ALWAYS_FOLLOW } from '../../src/sources/open-file.js';
import { planLines } from '../../src/cli/commands/plan.js';
import { rec, scenario, type Scenario } from '../sync/harness.js';
import { withFeeds } from './helpers.js';

/**
 * Issue 13 review: a change list's delete row of a record the connector does
 * not own (made by hand) is not applied (ownership: source). That is said,
 * not only counted: a summary warning names the record and the line (the
 * first few, the rest counted), in the sync's summary, plan's output and the
 * sync.summary log line.
 */

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
});

const CHANGES = { role: 'changes', source: { type: 'csv' }, mapping: { fields: { record_id: 'SKU', 'attributes.stock': { column: 'Qty', transforms: ['integer'] } } }, commands: { column: 'Op' } };
const hand = Array.from({ length: 7 }, (_, i) => `h-00${i + 1}`);

async function setup(): Promise<{ s: Scenario; ds: ReturnType<typeof withFeeds>; file: (rows: string[]) => Promise<string> }> {
  const s = await scenario({ manualClock: true, records: hand.map((id) => rec(id, `Hand ${id}`)) });
  sc = s;
  const ds = withFeeds(s, { changes: CHANGES });
  const file = async (rows: string[]) => {
    const f = join(s.dir, 'changes-1.csv');
    await writeFile(f, ['SKU,Qty,Op', ...rows].join('\n') + '\n');
    return f;
  };
  return { s, ds, file };
}

describe('a change list deleting records the connector does not own', () => {
  it('one delete row: the summary warns with the record id and its line, and the record stays', async () => {
    const { s, ds, file } = await setup();
    const sum = await s.engine.sync(ds, { file: await file(['h-002,0,delete']) });
    expect(sum.feed).toMatchObject({ notOwned: 1, deletesNotOwned: 1, firstDeletesNotOwned: [{ record_id: 'h-002', line: 2 }] });
    expect(sum.warnings).toEqual([expect.stringMatching(/^1 delete row in .*changes-1\.csv names a record the connector does not own .*not deleted: h-002 \(line 2\) \(feed changes; delete it in the portal/)]);
    expect(s.published().map((r) => r.record_id)).toContain('h-002');
    const logged = s.logs.filter((l) => l.event === 'sync.summary').at(-1)!;
    expect(logged.warnings).toEqual(sum.warnings);
  });

  it('many: the first five by id and line, the rest counted; plan prints the same warning', async () => {
    const { s, ds, file } = await setup();
    const f = await file(hand.map((id) => `${id},0,delete`));
    const p = await s.engine.plan(ds, f, ALWAYS_FOLLOW, { publish: true });
    const expected = /^7 delete rows in .*changes-1\.csv name records the connector does not own .*not deleted: h-001 \(line 2\), h-002 \(line 3\), h-003 \(line 4\), h-004 \(line 5\), h-005 \(line 6\) and 2 more /;
    expect(p.warnings).toEqual([expect.stringMatching(expected)]);
    expect(planLines(p).filter((l) => l.startsWith('warning: '))).toHaveLength(1);
    const sum = await s.engine.sync(ds, { file: f });
    expect(sum.warnings).toEqual(p.warnings);
    expect(s.published()).toHaveLength(7);
  });
});
