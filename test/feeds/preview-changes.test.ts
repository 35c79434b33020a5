import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { previewExport } from '../../src/cli/preview-report.js';
import { feedView, readerMapping } from '../../src/feeds/view.js';
import { commandColumnName } from '../../src/feeds/merge-changes.js';
import { fieldsOf } from '../../src/config/feed-fields.js';
import { withFeeds } from './helpers.js';
import { scenario, type Scenario } from '../sync/harness.js';

/** Issue 13 review: `preview --feed <change list>` checks the rows as plan/sync do and never shows the internal command attribute. */

let sc: Scenario | undefined;
let dir: string | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function preview(fields: Record<string, unknown>, csv: string[]) {
  sc = await scenario({ manualClock: true });
  const ds = feedView(withFeeds(sc, { changes: { role: 'changes', source: { type: 'csv' }, mapping: { fields }, commands: { column: 'Op' } } }), 'changes');
  dir = await mkdtemp(join(tmpdir(), 'preview-changes-'));
  const file = join(dir, 'changes.csv');
  await writeFile(file, csv.join('\n') + '\n');
  const feed = ds.feeds[ds.feed]!;
  const changes = { commands: feed.commands!, column: commandColumnName(feed.commands!), hasRequired: fieldsOf(feed).includes('display_name') && fieldsOf(feed).includes('api_value') };
  const out = new PassThrough();
  let text = '';
  out.on('data', (b: Buffer) => (text += b.toString()));
  const { rejected } = await previewExport(file, ds.source, readerMapping(ds), out, { limit: 20, changes });
  return { rejected, text };
}

describe('preview of a change list', () => {
  it('an unknown command word is a row error (INVALID_COMMAND): the file would be rejected, as plan and sync reject it', async () => {
    const { rejected, text } = await preview({ record_id: 'SKU', display_name: 'Name', api_value: 'Code' }, ['SKU,Name,Code,Op', 'A1,One,a1,update', 'A2,Two,a2,frobnicate']);
    expect(rejected?.code).toBe('ROW_ERRORS');
    expect(text).toMatch(/3\s+command\s+frobnicate\s+INVALID_COMMAND/);
    expect(text).toMatch(/verdict: the file would be rejected/);
    expect(text).not.toMatch(/__dc_command/);
  });

  it('a create without display_name and api_value mapped is a row error (INVALID_RECORD)', async () => {
    const { rejected, text } = await preview({ record_id: 'SKU', 'attributes.stock': { column: 'Qty', transforms: ['integer'] } }, ['SKU,Qty,Op', 'A1,4,create']);
    expect(rejected?.code).toBe('ROW_ERRORS');
    expect(text).toMatch(/INVALID_RECORD/);
  });

  it('good rows: the file would be used, and the records shown carry no command attribute', async () => {
    const { rejected, text } = await preview({ record_id: 'SKU', display_name: 'Name', api_value: 'Code' }, ['SKU,Name,Code,Op', 'A1,One,a1,create', 'A2,Two,a2,delete']);
    expect(rejected).toBeNull();
    expect(text).toMatch(/verdict: the file would be used/);
    expect(text).toMatch(/A1\s+One/);
    expect(text).not.toMatch(/__dc_command/);
  });
});
