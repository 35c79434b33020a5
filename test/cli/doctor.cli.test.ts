import { execFileSync } from 'node:child_process';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { tempFiles } from '../config/helpers.js';
import { runCli } from './run-cli.js';

const KEY = 'tbd_live_doctor_ok_1234567890';
const OFF_KEY = 'tbd_live_doctor_off_123456789';
const NOREAD_KEY = 'tbd_live_doctor_noread_12345';

let emu: RunningEmulator;

beforeAll(async () => {
  emu = await startEmulator({
    seed: {
      datasets: [
        { id: 'shop-1', name: 'Shop One', keys: [{ key: KEY }, { key: NOREAD_KEY, roles: ['write'] }] },
        { id: 'shop-off', api_enabled: false, keys: [{ key: OFF_KEY }] },
      ],
    },
  });
});
afterAll(async () => {
  await emu.close();
});

interface Finding {
  dataset: string;
  check: string;
  status: string;
  message: string;
}

async function doctor(datasetId: string, env: Record<string, string>, watch = '') {
  const yaml = [
    'datasets:',
    '  shop:',
    '    api:',
    `      base_url: ${emu.url}`,
    `      dataset_id: ${datasetId}`,
    '      key: { env: SHOP_KEY }',
    '    source: { type: csv }',
    '    mapping: { fields: { record_id: SKU, display_name: Name, api_value: SKU } }',
    watch,
  ].join('\n');
  const dir = await tempFiles({ 'connector.yaml': yaml });
  const r = await runCli(['doctor', '--json', '--config', join(dir, 'connector.yaml')], env);
  const findings = r.stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Finding);
  return { ...r, findings, dir };
}

describe('doctor against the emulator', () => {
  it('exit 0 when the key reads the dataset and the folder is usable', async () => {
    const inbox = join(await tempFiles({}), 'inbox');
    await mkdir(inbox);
    const r = await doctor('shop-1', { SHOP_KEY: KEY }, `    watch: { path: ${inbox} }`);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.findings).toContainEqual(expect.objectContaining({ check: 'dataset', status: 'ok', message: expect.stringContaining('Shop One') }));
    expect(r.findings).toContainEqual(expect.objectContaining({ check: 'versions', status: 'ok' }));
    expect(r.findings).toContainEqual(expect.objectContaining({ check: 'roles', status: 'ok', message: expect.stringMatching(/^read: yes/) }));
    expect(r.findings).toContainEqual(expect.objectContaining({ check: 'legacy', status: 'info' }));
    expect(r.findings.filter((f) => f.check === 'watch').map((f) => f.status)).toEqual(['ok', 'ok', 'ok']);
    expect(r.stdout).not.toContain(KEY);
  });

  it('API switch off: says to turn it on, exit 1', async () => {
    const r = await doctor('shop-off', { SHOP_KEY: OFF_KEY });
    expect(r.code).toBe(1);
    expect(r.findings).toContainEqual(expect.objectContaining({ check: 'dataset', status: 'fail', message: expect.stringMatching(/^API_DISABLED.*switch is off/) }));
  });

  it('account key: flagged by prefix and by the server', async () => {
    const r = await doctor('shop-1', { SHOP_KEY: 'tba_live_account_key_123' });
    expect(r.code).toBe(1);
    expect(r.findings).toContainEqual(expect.objectContaining({ check: 'key', status: 'fail', message: expect.stringMatching(/account key/) }));
    expect(r.findings).toContainEqual(expect.objectContaining({ check: 'dataset', status: 'fail', message: expect.stringMatching(/^ACCOUNT_KEY_NOT_SUPPORTED/) }));
  });

  it('a key without the read role, an unknown key, a missing folder', async () => {
    const noRead = await doctor('shop-1', { SHOP_KEY: NOREAD_KEY });
    expect(noRead.code).toBe(1);
    expect(noRead.findings).toContainEqual(expect.objectContaining({ check: 'dataset', status: 'fail', message: expect.stringMatching(/read role/) }));
    const unknown = await doctor('shop-1', { SHOP_KEY: 'tbd_live_not_issued_1234' }, '    watch: { path: /nonexistent/inbox }');
    expect(unknown.code).toBe(1);
    expect(unknown.findings).toContainEqual(expect.objectContaining({ check: 'dataset', status: 'fail', message: expect.stringMatching(/^UNAUTHORIZED/) }));
    expect(unknown.findings).toContainEqual(expect.objectContaining({ check: 'watch', status: 'fail', message: '/nonexistent/inbox: does not exist'.replace(/^/, 'folder ') }));
  });
});

describe('doctor: the state db and plans must be private', () => {
  it('warns (exit 0) for each state file or plans folder group or others can read, with the exact chmod; quiet once it was run', async () => {
    const base = await tempFiles({});
    const state = join(base, 'state dir'); // a space: the command must quote it
    await mkdir(join(state, 'state.db.plans'), { recursive: true });
    for (const [name, mode] of [['state.db', 0o644], ['state.db-wal', 0o640], ['state.db-shm', 0o600]] as const) {
      await writeFile(join(state, name), '');
      await chmod(join(state, name), mode);
    }
    await chmod(join(state, 'state.db.plans'), 0o755);
    const yaml = [
      `state_dir: "${state}"`,
      'datasets:',
      '  shop:',
      `    api: { base_url: "${emu.url}", dataset_id: shop-1, key: { env: SHOP_KEY } }`,
      '    source: { type: csv }',
      '    mapping: { fields: { record_id: SKU, display_name: Name, api_value: SKU } }',
    ].join('\n');
    const cfg = join(await tempFiles({ 'connector.yaml': yaml }), 'connector.yaml');
    const run = async () => {
      const r = await runCli(['doctor', '--json', '--config', cfg], { SHOP_KEY: KEY });
      return { ...r, state: r.stdout.trim().split('\n').map((l) => JSON.parse(l) as Finding).filter((f) => f.check === 'state') };
    };

    const before = await run();
    expect(before.code, before.stdout + before.stderr).toBe(0); // a warning, not a failure
    const q = (p: string) => `'${join(state, p)}'`;
    expect(before.state).toEqual([
      { dataset: null, check: 'state', status: 'warn', message: `${join(state, 'state.db')} is readable by group and others (mode 0644); it holds the shop's records: run chmod 600 ${q('state.db')}` },
      { dataset: null, check: 'state', status: 'warn', message: `${join(state, 'state.db-wal')} is readable by group (mode 0640); it holds the shop's records: run chmod 600 ${q('state.db-wal')}` },
      {
        dataset: null,
        check: 'state',
        status: 'warn',
        message: `folder ${join(state, 'state.db.plans')} can be listed or entered by group and others (mode 0755); its plans hold the shop's records: run chmod 700 ${q('state.db.plans')}`,
      },
    ]);
    // The commands, run as printed, are what it takes.
    for (const f of before.state) execFileSync('sh', ['-c', f.message.replace(/^.*: run /, '')]);
    const after = await run();
    expect(after.code).toBe(0);
    expect(after.state).toEqual([{ dataset: null, check: 'state', status: 'ok', message: `state db and plans in ${state} are private to their owner` }]);
  });
});

// Review of #13: on a fresh state_dir doctor said the state database was "unreadable ... move the file aside", of a file
// that does not exist yet.
describe('doctor: a state_dir with no state database yet', () => {
  const run = async (stateDir: string) => {
    const yaml = [
      `state_dir: "${stateDir}"`,
      'datasets:',
      '  shop:',
      `    api: { base_url: "${emu.url}", dataset_id: shop-1, key: { env: SHOP_KEY } }`,
      '    source: { type: csv }',
      '    mapping: { fields: { record_id: SKU, display_name: Name, api_value: SKU } }',
    ].join('\n');
    const r = await runCli(['doctor', '--json', '--config', join(await tempFiles({ 'connector.yaml': yaml }), 'connector.yaml')], { SHOP_KEY: KEY });
    return { ...r, state: r.stdout.trim().split('\n').map((l) => JSON.parse(l) as Finding).filter((f) => f.check === 'state') };
  };

  it('says the first start creates it (exit 0), not that a file is unreadable', async () => {
    const base = await tempFiles({});
    const r = await run(join(base, 'state', 'new'));
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(/unreadable|move the file aside/);
    expect(r.state).toContainEqual({ dataset: null, check: 'state', status: 'info', message: `no state database in ${join(base, 'state', 'new')} yet: the first start creates it (${base} exists; the folders below it are made too)` });
  });

  it('fails (exit 1) when no start could create it: a file where its folder would be', async () => {
    const base = await tempFiles({ 'taken': 'x' });
    const r = await run(join(base, 'taken', 'state'));
    expect(r.code).toBe(1);
    expect(r.state).toContainEqual(expect.objectContaining({ status: 'fail', message: expect.stringMatching(/cannot be created: .*taken is a file, not a folder; set state_dir/) }));
  });
});
