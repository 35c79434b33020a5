import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { reportError, reportSync } from '../../src/cli/report-error.js';
import { unknownDataset } from '../../src/config/errors.js';
import { ConnectorError } from '../../src/errors.js';
import { datasetYaml, tempFiles } from '../config/helpers.js';
import { runCli } from './run-cli.js';

/**
 * The line after an error says what to do in this case, not in the general
 * case of its action (issue 11, point 9, and the same class across the
 * commands); exit codes follow the README's table.
 */

function printed(fn: (out: { write(s: string): unknown }) => number): { code: number; text: string } {
  let text = '';
  const code = fn({ write: (s: string) => (text += s) });
  return { code, text };
}

const sync = (code: string | null, result: 'held' | 'staged' | 'waiting' | 'failed' | 'rejected', action: 'hold' | 'retry' | 'reject' | 'stop') =>
  printed((out) => reportSync({ dataset: 'shop-1', file: '/srv/x.csv', result, code, action, message: 'm' }, out));

describe('what to do next, by case', () => {
  it.each([
    ['DRAFT_PENDING', 'waiting', 'hold', 3, /publish or discard it in the portal .*approve and discard do not act on it/],
    ['DRAFT_MIXED', 'waiting', 'hold', 3, /publish or discard it in the portal, then sync again; approve and discard do not act on it/],
    ['HELD_PUBLISH_REQUIRED', 'staged', 'hold', 3, /the key has no publish role: publish the draft in the portal/],
    ['HELD_GUARD', 'held', 'hold', 3, /see `dataset-connector status`, then `approve` or `discard`/],
    ['FILE_NOT_FOUND', 'rejected', 'retry', 66, /check the path given with --file/],
    ['MAINTENANCE', 'failed', 'retry', 75, /^ {2}this may be temporary: run the command again later$/m],
    ['TRUNCATED', 'rejected', 'reject', 1, /the input was rejected; nothing from it was published/],
  ] as const)('a sync ending %s (%s) exits %i and says what to do', (code, result, action, exit, hint) => {
    const r = sync(code, result, action);
    expect(r.code).toBe(exit);
    expect(r.text.split('\n')[1]).toMatch(hint);
    expect(r.text).not.toContain('the connector will try again'); // nothing retries a command but whoever ran it
  });

  it('an unknown dataset is a usage error (2) with the names there are, not "the input was rejected"', () => {
    const r = printed((out) => reportError(unknownDataset('nope', ['shop-1', 'shop-2']), out));
    expect(r.code).toBe(2);
    expect(r.text).toBe(
      'error [UNKNOWN_DATASET] (dataset nope): no dataset "nope" in the configuration (known: shop-1, shop-2)\n' +
        '  use a dataset name from the configuration (dataset-connector validate lists them)\n',
    );
  });

  it('a key without the publish role met by a command says to use the portal, not to approve or discard again', () => {
    const err = new ConnectorError('PUBLISH_REQUIRED', 'this operation needs a key with the publish role', { action: 'hold', context: { dataset: 'shop-1' } });
    const r = printed((out) => reportError(err, out));
    expect(r.code).toBe(3);
    expect(r.text).toContain('publish or discard the draft in the portal');
    expect(r.text).not.toContain('`approve` or `discard`');
  });
});

describe('the commands (built CLI)', () => {
  it('every command naming a dataset not in the configuration exits 2 with the same message', async () => {
    const dir = await tempFiles({ 'connector.yaml': `state_dir: ./state\ndatasets:\n${datasetYaml('shop-1')}\n`, 'x.csv': 'SKU,Name\n' });
    const config = join(dir, 'connector.yaml');
    const file = join(dir, 'x.csv');
    const runs = await Promise.all(
      [
        ['sync', 'nope', '--file', file],
        ['plan', 'nope', '--file', file],
        ['approve', 'nope'],
        ['discard', 'nope'],
        ['preview', '--dataset', 'nope', '--file', file],
        ['doctor', '--dataset', 'nope'],
      ].map((args) => runCli(['--config', config, ...args], { SHOP_1_KEY: 'tbd_live_messages_test_0001' })),
    );
    for (const r of runs) {
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain('error [UNKNOWN_DATASET] (dataset nope): no dataset "nope" in the configuration (known: shop-1)');
      expect(r.stderr).not.toContain('rejected');
    }
  });

  it('plan of an export a sync would reject exits 1 and says so on stderr, as preview does', async () => {
    const dir = await tempFiles({ 'connector.yaml': `state_dir: ./state\ndatasets:\n${datasetYaml('shop-1')}\n`, 'empty.csv': '' });
    const args = ['--config', join(dir, 'connector.yaml'), 'plan', 'shop-1', '--file', join(dir, 'empty.csv')];
    for (const json of [false, true]) {
      const r = await runCli(json ? [...args, '--json'] : args, { SHOP_1_KEY: 'tbd_live_messages_test_0001' });
      expect(r.code, r.stderr).toBe(1);
      expect(r.stderr).toMatch(new RegExp(`^rejected \\[\\w+\\] \\(dataset shop-1, file ${join(dir, 'empty.csv')}\\): `, 'm'));
      expect(r.stderr).toContain('a sync would publish nothing from this export');
      // Piped, plan prints JSON with or without --json (a terminal gets the lines: terminal.cli.test.ts).
      expect(JSON.parse(r.stdout)).toMatchObject({ plan: null, rejectedCode: expect.any(String) });
    }
    const preview = await runCli(['--config', join(dir, 'connector.yaml'), 'preview', '--dataset', 'shop-1', '--file', join(dir, 'empty.csv')]);
    expect(preview.code).toBe(1);
  });
});

describe('plan of a feed file a sync would reject', () => {
  it('names the row errors, the reject file, and a preview with --feed (its source and mapping read the file)', async () => {
    const yaml = [
      'state_dir: ./state',
      'datasets:',
      '  shop-1:',
      '    api: { base_url: "http://127.0.0.1:8787", key: { env: SHOP_1_KEY } }',
      '    feeds:',
      '      main: { role: full, source: { type: csv }, mapping: { fields: { record_id: SKU, display_name: Name, api_value: SKU } } }',
      '      stock: { role: update, source: { type: csv }, mapping: { fields: { record_id: SKU, attributes.stock: { column: Qty, transforms: [integer] } } } }',
    ].join('\n');
    const dir = await tempFiles({ 'connector.yaml': `${yaml}\n`, 'stock.csv': 'SKU,Qty\nA001,５\nA002,4\n' });
    const r = await runCli(['--config', join(dir, 'connector.yaml'), 'plan', 'shop-1', '--feed', 'stock', '--file', join(dir, 'stock.csv')], { SHOP_1_KEY: 'tbd_live_messages_test_0001' });
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain('line 2, column Qty: TRANSFORM_FAILED');
    expect(r.stderr, r.stderr).toMatch(/every row error is in .*stock\.rejected\.csv/);
    expect(r.stderr).toContain(`preview --dataset shop-1 --feed stock --file ${join(dir, 'stock.csv')}`);
    // sync of the same file says the same under its rejection (the same lines: rowErrorLines).
    const synced = await runCli(['--config', join(dir, 'connector.yaml'), 'sync', 'shop-1', '--feed', 'stock', '--file', join(dir, 'stock.csv')], { SHOP_1_KEY: 'tbd_live_messages_test_0001' });
    expect(synced.code, synced.stderr).toBe(1);
    expect(synced.stderr).toMatch(/^rejected \[ROW_ERRORS\]/m);
    expect(synced.stderr).toContain('line 2, column Qty: TRANSFORM_FAILED');
    expect(synced.stderr, synced.stderr).toMatch(/every row error is in .*stock\.rejected\.csv/);
  });
});

describe('sync of a rejected file on stderr', () => {
  it('names the first row errors and the reject file under the rejection, before what to do', () => {
    const { text } = printed((out) =>
      reportSync({ dataset: 'shop-1', file: '/srv/x.csv', result: 'rejected', code: 'ROW_ERRORS', action: 'reject', message: 'm', firstRowErrors: [{ line: 3, column: 'Op', code: 'INVALID_COMMAND' }], rejectFile: '/srv/x.rejected.csv' }, out),
    );
    expect(text.split('\n').slice(1, 3)).toEqual(['  line 3, column Op: INVALID_COMMAND', '  every row error is in /srv/x.rejected.csv']);
  });
});

// Review of #13 (rv13b, D5): plan and sync refuse a change list whose upsert would create a record without
// display_name and api_value (INVALID_RECORD, judged against the snapshot), and plan's message sends the person to
// `preview --feed` for "every row error"; preview, which does not look at the snapshot, lists no row error and says
// "the file would be used".
describe('preview of a change list agrees with plan on an upsert that would create without its fields', () => {
  it('preview --feed lists the INVALID_RECORD row and says the file would be rejected, as plan does', async () => {
    const yaml = [
      'state_dir: ./state',
      'datasets:',
      '  shop-1:',
      '    api: { base_url: "http://127.0.0.1:8787", key: { env: SHOP_1_KEY } }',
      '    feeds:',
      '      changes: { role: changes, source: { type: csv }, commands: { column: Op }, mapping: { fields: { record_id: SKU, display_name: Name, api_value: Code, attributes.price: { column: Price, transforms: [number] } } } }',
    ].join('\n');
    const dir = await tempFiles({ 'connector.yaml': `${yaml}\n`, 'changes.csv': 'SKU,Name,Code,Price,Op\nA001,Tea,a1,3,create\nA077,,,7,upsert\n' });
    const env = { SHOP_1_KEY: 'tbd_live_messages_test_0001' };
    const planned = await runCli(['--config', join(dir, 'connector.yaml'), 'plan', 'shop-1', '--feed', 'changes', '--file', join(dir, 'changes.csv')], env);
    expect(planned.code, planned.stderr).toBe(1);
    expect(planned.stderr).toContain('line 3, column record: INVALID_RECORD');
    expect(planned.stderr).toContain('preview --dataset shop-1 --feed changes');
    const previewed = await runCli(['--config', join(dir, 'connector.yaml'), 'preview', '--dataset', 'shop-1', '--feed', 'changes', '--file', join(dir, 'changes.csv')], env);
    expect(previewed.stdout).toMatch(/3\s+record\s+upsert\s+INVALID_RECORD/);
    expect(previewed.stdout).toMatch(/verdict: the file would be rejected/);
    expect(previewed.code).toBe(1);
  });
});
