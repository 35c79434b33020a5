import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { recs, scenario, type Scenario } from './harness.js';

/** The summary (and its sync.summary line) carries what to do next: the failure's action, or the one its result implies. */

let s: Scenario;
afterEach(async () => s?.close());

const summaryLines = (sc: Scenario) => sc.logs.filter((l) => l.event === 'sync.summary');

describe('sync summary: action', () => {
  it('null when published or unchanged, hold when a guard holds, reject for a refused file; the log line has it too', async () => {
    s = await scenario({ records: recs(10) });
    expect(await s.engine.sync(s.ds, { file: await s.writeExport(recs(10)) })).toMatchObject({ result: 'unchanged', code: null, action: null });
    expect(await s.engine.sync(s.ds, { file: await s.writeExport(recs(5)) })).toMatchObject({ result: 'held', code: 'HELD_GUARD', action: 'hold' });
    const headerOnly = join(s.dir, 'header-only.csv');
    await writeFile(headerOnly, 'SKU,Name,Code\n');
    const rejected = await s.engine.sync(s.ds, { file: headerOnly });
    expect(rejected).toMatchObject({ result: 'rejected', action: 'reject' });
    expect(summaryLines(s).map((l) => [l.result, l.action])).toEqual([
      ['unchanged', null],
      ['held', 'hold'],
      ['rejected', 'reject'],
    ]);
  });

  it('retry when the server is unavailable (503, a code the old list of temporary codes did not have)', async () => {
    s = await scenario({ records: recs(3) });
    s.em.emulator.faults.add({ status: 503, count: Infinity });
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(recs(3)) });
    expect({ result: sum.result, code: sum.code, action: sum.action }).toEqual({ result: 'failed', code: 'UNAVAILABLE', action: 'retry' });
  });
});
