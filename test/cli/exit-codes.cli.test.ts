import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exitCodeFor, exitCodeForSync, ExitCode } from '../../src/cli/exit-codes.js';
import { COMMANDS } from '../../src/cli/commands/index.js';
import { buildProgram, commandNamed } from '../../src/cli/program.js';
import { ConfigError } from '../../src/config/errors.js';
import { ConnectorError } from '../../src/errors.js';
import { datasetYaml, tempFiles } from '../config/helpers.js';
import { runCli } from './run-cli.js';

const good = `datasets:\n${datasetYaml('shop-1')}\n`;

describe('exitCodeFor', () => {
  it('maps by code and action, never by message', () => {
    expect(exitCodeFor(new ConfigError([{ file: 'f', line: 1, path: 'x', message: 'm' }]))).toBe(78);
    expect(exitCodeFor(new ConnectorError('KEY_FILE_PERMISSIONS', 'm', { action: 'stop' }))).toBe(78);
    expect(exitCodeFor(new ConnectorError('RATE_LIMITED', 'm', { action: 'retry' }))).toBe(75);
    expect(exitCodeFor(new ConnectorError('GUARD_HELD', 'm', { action: 'hold' }))).toBe(3);
    expect(exitCodeFor(new ConnectorError('FILE_REJECTED', 'm', { action: 'reject' }))).toBe(1);
    expect(exitCodeFor(new Error('plain'))).toBe(1);
  });

  it('a sync: 0 when published or unchanged, 66 when its file is missing, else by the action its summary carries', () => {
    expect(exitCodeForSync({ result: 'unchanged', action: null, code: null })).toBe(0);
    expect(exitCodeForSync({ result: 'published', action: null, code: null })).toBe(0);
    expect(exitCodeForSync({ result: 'held', action: 'hold', code: null })).toBe(3);
    expect(exitCodeForSync({ result: 'staged', action: 'hold', code: null })).toBe(3);
    expect(exitCodeForSync({ result: 'waiting', action: 'hold', code: null })).toBe(3);
    expect(exitCodeForSync({ result: 'failed', action: 'retry', code: null })).toBe(75);
    expect(exitCodeForSync({ result: 'interrupted', action: 'retry', code: null })).toBe(75);
    expect(exitCodeForSync({ result: 'failed', action: 'reject', code: null })).toBe(1); // ALL_REFUSED, a FAILED job
    expect(exitCodeForSync({ result: 'rejected', action: 'reject', code: null })).toBe(1);
    expect(exitCodeForSync({ result: 'stopped', action: 'stop', code: null })).toBe(1);
    // Without an action (a summary from before the field), by result as before.
    expect(exitCodeForSync({ result: 'failed', action: null, code: null })).toBe(1);
    expect(exitCodeForSync({ result: 'held', action: null, code: null })).toBe(3);
    expect(exitCodeForSync({ result: 'interrupted', action: null, code: null })).toBe(75);
    // The file named on the command line is missing: the daemon would retry it, the command says so at once.
    expect(exitCodeForSync({ result: 'rejected', action: 'retry', code: 'FILE_NOT_FOUND' })).toBe(66);
    expect(exitCodeFor(new ConnectorError('FILE_UNREADABLE', 'm', { action: 'retry' }))).toBe(66);
  });
});

describe('dataset-connector (built CLI)', () => {
  it('--help and --version exit 0; every command has --help', async () => {
    const help = await runCli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/--config <path>/);
    const sub = await runCli(['validate', '--help']);
    expect(sub.code).toBe(0);
    expect(sub.stdout).toMatch(/Usage: dataset-connector validate/);
    expect((await runCli(['--version'])).stdout).toMatch(/^\d+\.\d+\.\d+/);
    // Every registered command, in-process (one child per command is slow on a busy machine).
    const program = await buildProgram();
    const names = program.commands.map((c) => c.name());
    expect(names).toEqual(expect.arrayContaining(['validate', 'doctor', 'emulator', 'schema']));
    for (const c of program.commands) {
      expect(c.description(), c.name()).not.toBe('');
      expect(c.helpInformation(), c.name()).toMatch(new RegExp(`Usage: dataset-connector ${c.name()}`));
      expect(help.stdout, c.name()).toMatch(new RegExp(`^  ${c.name()}\\b`, 'm'));
    }
  });

  it('loads only the command the words name; each table entry registers the command of its name', async () => {
    for (const name of Object.keys(COMMANDS)) {
      const program = await buildProgram([name, '--help']);
      expect(program.commands.map((c) => c.name())).toEqual([name]);
    }
    const all = Object.keys(COMMANDS).length;
    const loaded = async (args: string[]) => (await buildProgram(args)).commands.map((c) => c.name());
    expect(await loaded(['-c', 'status', '--log-level', 'debug', 'sync', '--file', 'x'])).toEqual(['sync']);
    expect(await loaded(['--config=/x.yaml', 'help', 'plan'])).toEqual(['plan']);
    expect(await loaded(['--', 'validate'])).toEqual(['validate']);
    for (const args of [[], ['--help'], ['help'], ['no-such-command'], ['-c', 'x']]) expect(await loaded(args), args.join(' ')).toHaveLength(all);
    expect(commandNamed(await buildProgram([]), ['-V'])).toBeUndefined();
  });

  it('usage errors exit 2', async () => {
    const runs = await Promise.all([['no-such-command'], ['validate', '--no-such-option'], ['--log-format', 'xml', 'validate']].map((a) => runCli(a)));
    expect(runs.map((r) => r.code)).toEqual([ExitCode.USAGE, ExitCode.USAGE, ExitCode.USAGE]);
  });

  it('validate: 0 for a good config', async () => {
    const dir = await tempFiles({ 'connector.yaml': good });
    const r = await runCli(['validate', '--config', join(dir, 'connector.yaml')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/configuration OK: 1 dataset \(shop-1\)/);
  });

  it('validate: 78 for a bad config, printing every issue as file:line: option: message', async () => {
    const text = `bogus: 1\n${good}`.replace('base_url: http://127.0.0.1:8787', 'base_url: 42');
    const dir = await tempFiles({ 'connector.yaml': text });
    const file = join(dir, 'connector.yaml');
    const r = await runCli(['validate', '--config', file]);
    expect(r.code).toBe(ExitCode.CONFIG);
    expect(r.stderr).toContain(`${file}:1: bogus: unknown option "bogus"`);
    expect(r.stderr).toContain(`${file}:5: datasets.shop-1.api.base_url: expected an http(s) URL such as https://api.example.com`);
  });

  it('validate: 78 for a missing config file; the path may come from DATASET_CONNECTOR_CONFIG', async () => {
    const r = await runCli(['validate'], { DATASET_CONNECTOR_CONFIG: '/nonexistent/connector.yaml' });
    expect(r.code).toBe(78);
    expect(r.stderr).toContain('/nonexistent/connector.yaml: cannot read the configuration: file not found');
  });

  it('validate --json: the issues as JSON', async () => {
    const dir = await tempFiles({ 'connector.yaml': `bogus: 1\n${good}` });
    const r = await runCli(['validate', '--json', '--config', join(dir, 'connector.yaml')]);
    expect(r.code).toBe(78);
    expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, issues: [{ line: 1, path: 'bogus' }] });
  });

  it('validate --keys: 78 for a key file others can read, without printing the key', async () => {
    const key = 'tbd_live_CANARY_cli_0644';
    const dir = await tempFiles({ 'key': key, 'connector.yaml': '' }, { key: 0o644 });
    const text = good.replace('key: { env: SHOP_1_KEY }', `key: { file: ${join(dir, 'key')} }`);
    const cfg = await tempFiles({ 'connector.yaml': text });
    const r = await runCli(['validate', '--keys', '--config', join(cfg, 'connector.yaml')]);
    expect(r.code).toBe(78);
    expect(r.stderr).toContain(`chmod 600 ${join(dir, 'key')}`);
    expect(r.stdout + r.stderr).not.toContain(key);
  });

  it('validate --keys: 0 when every key can be read', async () => {
    const dir = await tempFiles({ 'connector.yaml': good });
    const r = await runCli(['validate', '--keys', '--config', join(dir, 'connector.yaml')], { SHOP_1_KEY: 'tbd_live_x1234' });
    expect(r.code).toBe(0);
  });

  it('schema prints the JSON Schema', async () => {
    const r = await runCli(['schema']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ title: 'dataset-connector configuration', type: 'object' });
  });

  it('doctor: exit 1 when the key is missing or the service is unreachable', async () => {
    const text = good.replace('http://127.0.0.1:8787', 'http://127.0.0.1:9');
    const dir = await tempFiles({ 'connector.yaml': text });
    const noKey = await runCli(['doctor', '--config', join(dir, 'connector.yaml')]);
    expect(noKey.code).toBe(1);
    expect(noKey.stdout).toMatch(/shop-1 {2}FAIL {2}key .*SHOP_1_KEY \(not set\)/);
    const down = await runCli(['doctor', '--json', '--config', join(dir, 'connector.yaml')], { SHOP_1_KEY: 'tbd_live_doctor1234' });
    expect(down.code).toBe(1);
    const findings = down.stdout.trim().split('\n').map((l) => JSON.parse(l) as { check: string; status: string; message: string });
    expect(findings).toContainEqual(expect.objectContaining({ check: 'dataset', status: 'fail', message: expect.stringMatching(/^NETWORK_ERROR/) }));
    expect(down.stdout).not.toContain('tbd_live_doctor1234');
  });
});
