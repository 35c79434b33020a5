import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rejectFilePath } from '../../src/sources/reject-file.js';
import { scenario, type Scenario } from '../sync/harness.js';
import { withFeeds } from './helpers.js';

/** Issue 13 review: a sync's summary of a rejected file carries its first row errors and its reject file (what plan prints, sync prints too). */

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
});

describe('the summary of a rejected file', () => {
  it("a change list's unknown command word: the row error and the reject file are in the summary and the log line", async () => {
    sc = await scenario({ manualClock: true });
    const ds = withFeeds(sc, { changes: { role: 'changes', source: { type: 'csv' }, mapping: { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'Code' } }, commands: { column: 'Op' } } });
    const file = join(sc.dir, 'changes-1.csv');
    await writeFile(file, 'SKU,Name,Code,Op\nA1,One,a1,create\nA2,Two,a2,frobnicate\n');
    const s = await sc.engine.sync(ds, { file });
    expect(s).toMatchObject({ result: 'rejected', code: 'ROW_ERRORS', firstRowErrors: [{ line: 3, column: 'command', code: 'INVALID_COMMAND' }], rejectFile: rejectFilePath(file) });
    const logged = sc.logs.filter((l) => l.event === 'file.rejected').at(-1)!;
    expect(logged).toMatchObject({ rejectFile: rejectFilePath(file), first_row_errors: [{ line: 3, code: 'INVALID_COMMAND' }] });
  });

  it('a bad cell: the reader\'s row error and its reject file', async () => {
    sc = await scenario({ manualClock: true });
    const ds = withFeeds(sc, { stock: { role: 'update', source: { type: 'csv' }, mapping: { fields: { record_id: 'SKU', 'attributes.stock': { column: 'Qty', transforms: ['integer'] } } } } });
    const file = join(sc.dir, 'stock-1.csv');
    await writeFile(file, 'SKU,Qty\nA1,lots\n');
    const s = await sc.engine.sync(ds, { file });
    expect(s).toMatchObject({ result: 'rejected', firstRowErrors: [{ line: 2, column: 'Qty', code: expect.any(String) }], rejectFile: rejectFilePath(file) });
  });
});
