// Child processes on a pseudo-terminal (slow kind): what a person at a terminal sees (issue 17).
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { runCli, runCliTty } from './cli-child.js';
import { recs, writeSkuExport } from './harness.js';

const KEY = 'tbd_live_terminal_test_key_0000000';
const env = { TERM_TEST_KEY: KEY };
let em: RunningEmulator;
let dir: string;
let config: string;

const writeExport = (name: string, records: DatasetRecord[]) => writeSkuExport(dir, name, records);

/** What the terminal shows at the end: each line as left after its last carriage return, without erase codes. */
function screen(text: string): string {
  return text
    .split('\n')
    .map((l) => l.split('\r').pop()!.replace(/\x1b\[K/g, ''))
    .join('\n');
}

const tty = async (args: string[], input = '') => {
  const r = await runCliTty(['--config', config, ...args], env, input);
  return { ...r, raw: r.stdout, stdout: screen(r.stdout) };
};
const piped = (...args: string[]) => runCli(['--config', config, ...args], env);

beforeAll(async () => {
  em = await startEmulator();
  em.emulator.addDataset({ id: 'shop-1', records: [] });
  em.emulator.addKey({ dataset: 'shop-1', key: KEY, roles: ['read', 'write', 'replace', 'publish'] });
  dir = await mkdtemp(join(tmpdir(), 'dc-tty-'));
  config = join(dir, 'connector.yaml');
  await writeFile(
    config,
    `state_dir: ${join(dir, 'state')}\ndatasets:\n  shop-1:\n    api:\n      base_url: ${em.url}\n      key: { env: TERM_TEST_KEY }\n` +
      `    source: { type: csv }\n    mapping:\n      fields: { record_id: SKU, display_name: Name, api_value: Code }\n`,
  );
});
afterAll(async () => {
  await em?.close();
});

describe('the terminal: a summary for a person, JSON when piped', () => {
  it('sync on a terminal prints one summary line and no JSON log lines; piped, the JSON log with sync.summary', async () => {
    const r = await tty(['sync', 'shop-1', '--file', await writeExport('ten.csv', recs(10))]);
    expect(r.status, r.stdout).toBe(0);
    expect(r.stdout).toMatch(/^shop-1: published version \d+ from .*ten\.csv: 10 added, 0 changed, 0 deleted \(10 rows, \w+, \d+ requests, [\d.]+ s\)$/m);
    expect(r.stdout).not.toContain('{"level"');
    // While it ran: a progress line redrawn in place (rows read, requests sent of the changes planned).
    expect(r.raw).toMatch(/\r\x1b\[K10 rows read · path per_record · \d+ requests sent, 10 changes planned/);

    const p = await piped('sync', 'shop-1', '--file', await writeExport('eleven.csv', recs(11)));
    expect(p.status, p.stderr).toBe(0);
    const lines = p.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.find((l) => l.event === 'sync.summary')).toMatchObject({ result: 'published', adds: 1 });
  });

  it('status: lines on a terminal, one JSON object piped or with --json', async () => {
    const t = await tty(['status']);
    expect(t.stdout).toMatch(/^shop-1: published at .*; 11 records \(11 owned\)/m);
    const p = await piped('status');
    expect(JSON.parse(p.stdout)).toMatchObject({ datasets: [{ dataset: 'shop-1', records: 11 }] });
    const j = await tty(['status', '--json']);
    expect(JSON.parse(j.stdout.trim())).toMatchObject({ datasets: [{ dataset: 'shop-1' }] });
  });

  it('approve on a terminal shows what it will publish and asks: "n" publishes nothing, --yes does not ask', async () => {
    // Three of eleven gone: the delete guard holds it (27% > 20%).
    const held = await piped('sync', 'shop-1', '--file', await writeExport('fewer.csv', recs(8)));
    expect(held.status).toBe(3);
    const draft = em.emulator.describe('shop-1').draft_version!;
    expect(draft).not.toBeNull();

    const no = await tty(['approve', 'shop-1'], 'n\n');
    expect(no.status).toBe(1);
    expect(no.stdout).toContain(`shop-1: draft version ${draft}, held since `);
    expect(no.stdout).toMatch(/why: .*max_delete_ratio/);
    expect(no.stdout).toContain('publishes: 0 added, 0 changed, 3 deleted (11 records now, 8 after)');
    expect(no.stdout).toContain('delete: r-009, r-010, r-011');
    expect(no.raw).toContain('Publish this change? [y/N]');
    expect(no.stdout).toContain('shop-1: not approved; nothing was published (the change stays held)');
    expect(em.emulator.describe('shop-1').draft_version).toBe(draft);
    expect(em.emulator.records('shop-1')).toHaveLength(11);

    const yes = await tty(['approve', 'shop-1', '--yes']);
    expect(yes.status, yes.stdout).toBe(0);
    expect(yes.raw).not.toContain('[y/N]');
    expect(yes.stdout).toContain(`shop-1: published (version ${draft}): published version ${draft}`);
    expect(em.emulator.records('shop-1')).toHaveLength(8);
  });
});
