import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { scenario, type Scenario } from './harness.js';

/**
 * Issue 13 review (D7b): a refused file is the last attempt status shows, with
 * its file and code, beside the last publish: the shop is stale until a good
 * file comes, and an IT person reading status must see that.
 */

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
});

describe('status after a refused file', () => {
  it('shows the refusal (file, code) as the last sync, and when the dataset last published', async () => {
    sc = await scenario({ manualClock: true });
    const good = await sc.writeExport([{ record_id: 'A1', display_name: 'Apple', api_value: 'a1' }]);
    expect((await sc.engine.sync(sc.ds, { file: good })).result).toBe('published');
    const publishedAt = sc.engine.status(sc.ds).lastSync!.at;

    const bad = join(sc.dir, 'bad.csv');
    await writeFile(bad, 'SKU,Title\nA1,Apple\n');
    const s = await sc.engine.sync(sc.ds, { file: bad });
    expect(s.result).toBe('rejected');
    const status = sc.engine.status(sc.ds);
    expect(status.lastSync).toMatchObject({ result: 'rejected', detail: { file: bad, code: s.code } });
    expect(status.lastSuccessAt).toBe(publishedAt);
  });
});
