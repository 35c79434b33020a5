import { afterEach, describe, expect, it } from 'vitest';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ids, scenario, type Scenario } from './harness.js';

// Issue 11: an export read wrongly publishes nothing. Each case syncs against the emulator over real HTTP.
let s: Scenario;
afterEach(async () => s?.close());

const mapping = { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'Code', 'attributes.stock': 'Stock' } };
const FIRST = 'SKU,Name,Code,Stock\nB010,Tea,tea,12\nB020,Rice,rice,7\nB030,Milk,milk,530\n';

/** Every write the emulator received after the first sync (none is the point). */
function writesSince(from: number): string[] {
  return s.em.emulator.requests
    .slice(from)
    .filter((r) => r.method !== 'GET')
    .map((r) => `${r.method} ${r.path}`);
}

/** A scenario whose dataset holds B010, B020, B030 published by a first sync; returns the request count then. */
async function afterFirstSync(): Promise<number> {
  s = await scenario({ mapping });
  const file = join(s.dir, 'first.csv');
  await writeFile(file, FIRST);
  expect((await s.engine.sync(s.ds, { file })).result).toBe('published');
  return s.em.emulator.requests.length;
}

function stockOf(id: string): unknown {
  return s.published().find((r) => r.record_id === id)?.attributes.stock;
}

describe('point 4: short and truncated rows', () => {
  it('an export cut in its last row is refused whole (TRUNCATED): nothing sent, nothing deleted', async () => {
    const from = await afterFirstSync();
    const file = join(s.dir, 'cut.csv');
    await writeFile(file, 'SKU,Name,Code,Stock\nB010,Tea,tea,12\nB020,Rice,rice,7\nB030,Milk,mi');
    const sum = await s.engine.sync(s.ds, { file });
    expect(sum).toMatchObject({ result: 'rejected', code: 'TRUNCATED' });
    expect(writesSince(from)).toEqual([]);
    expect(ids(s.published())).toEqual(['B010', 'B020', 'B030']);
    expect(stockOf('B030')).toBe('530');
  });

  it('a short row is a row error with its line in the reject file; nothing from the file is published', async () => {
    const from = await afterFirstSync();
    const file = join(s.dir, 'short.csv');
    await writeFile(file, 'SKU,Name,Code,Stock\nB010,Tea,tea,13\nB901,Short,short\nB020,Rice,rice,7\nB030,Milk,milk,530\n');
    const sum = await s.engine.sync(s.ds, { file });
    expect(sum).toMatchObject({ result: 'rejected', code: 'ROW_ERRORS' });
    expect(writesSince(from)).toEqual([]);
    expect(stockOf('B010')).toBe('12');
    expect(s.published().some((r) => r.record_id === 'B901')).toBe(false);
  });
});
