import { execFile, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningA2aEmulator } from '../../src/emulator/a2a/server.js';
import { ALICE_KEY, holdFirstEvent, N, startEmu } from './helpers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const MAIN = join(ROOT, 'dist/cli/main.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Run the built CLI as a child process (asynchronously: the emulator lives in
 * this process). These tests are the slow kind: each starts Node. What does
 * not need a real process (waits, modes, Ctrl-C timing) is in call-action.test.ts.
 */
function cli(args: string[], env: Record<string, string> = {}, started?: (child: ChildProcess) => void): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [MAIN, ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 20_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    started?.(child);
  });
}

describe('dataset-connector call (child process)', () => {
  let emu: RunningA2aEmulator;
  let dir: string;
  let keyFile: string;
  let answers2: string;
  let answers1: string;

  beforeAll(async () => {
    emu = await startEmu();
    dir = await mkdtemp(join(tmpdir(), 'call-cmd-'));
    keyFile = join(dir, 'a2a.key');
    await writeFile(keyFile, `${ALICE_KEY}\n`, { mode: 0o600 });
    answers2 = join(dir, 'answers2.txt');
    await writeFile(answers2, 'Tuesday\n\nYes, the back door is fine\n');
    answers1 = join(dir, 'answers1.txt');
    await writeFile(answers1, 'Tuesday\n');
  });
  afterAll(async () => {
    await emu.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('--emulator --answers: prints the conversation as it happens and ends completed (exit 0)', async () => {
    const r = await cli(['call', '--to', '+81 3-0000-0001', '--goal', 'Arrange a delivery', '--emulator', '--answers', answers2]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    const order = [
      'no real call is placed',
      'calling +81300000001',
      'call accepted',
      'connected',
      'them: Hello, Green Grocer',
      'agent asks: The shop asks which delivery date',
      'you: Tuesday',
      'them: Tuesday works for us.',
      'agent asks: They also ask whether to leave the parcel',
      'you: Yes, the back door is fine',
      'them: Thank you, goodbye.',
      'call completed',
      'outcome: completed',
    ];
    let at = 0;
    for (const want of order) {
      const found = lines.findIndex((l, i) => i >= at && l.includes(want));
      expect(found, `"${want}" after line ${at} in:\n${r.stdout}`).toBeGreaterThanOrEqual(at);
      at = found + 1;
    }
  });

  it('no answers left and no terminal: ends the call with a clear message (exit 3)', async () => {
    const r = await cli(['call', '--to', '+81300000001', '--goal', 'Arrange a delivery', '--emulator', '--answers', answers1]);
    expect(r.code).toBe(3);
    expect(r.stdout).toContain('call canceled');
    expect(r.stdout).toContain('no answer to give');
  });

  it('a real call (here: the test emulator) with --key-file, --yes and --answers: one call, answers delivered', async () => {
    const before = emu.emulator.credits;
    const r = await cli(['call', '--to', N.ask, '--goal', 'Offer a day', '--base-url', emu.url, '--key-file', keyFile, '--yes', '--answers', answers1]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('them: もしもし、佐藤です。');
    expect(emu.emulator.credits).toBe(before + 1);
    const call = emu.emulator.calls.at(-1)!;
    expect(call).toMatchObject({ to: N.ask, goal: 'Offer a day', via: 'message/stream', account: 'alice' });
    expect(emu.emulator.task(call.taskId)!.answers).toEqual(['Tuesday']);
  });

  it('the key may come from $A2A_KEY; a failed start exits 1 with the reason', async () => {
    const r = await cli(['call', '--to', N.fail, '--goal', 'Try', '--base-url', emu.url, '--yes'], { A2A_KEY: ALICE_KEY });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('call failed: number unreachable');
  });

  it('A27-states: a refused call and an authorisation the key lacks each exit 1 saying what to do', async () => {
    const before = emu.emulator.credits;
    const run = (to: string) => cli(['call', '--to', to, '--goal', 'Try', '--base-url', emu.url, '--key-file', keyFile, '--yes', '--answers', answers1]);
    const [rejected, auth] = await Promise.all([run(N.reject), run(N.authMidCall)]);
    expect(rejected.code).toBe(1);
    expect(rejected.stdout).toContain('call refused by the service, not placed: number not allowed for this account');
    expect(rejected.stderr).toContain('refused the call (rejected)');
    expect(auth.code).toBe(1);
    expect(auth.stdout).toContain('them: Hello.');
    expect(auth.stdout).toContain('outcome: auth-required (the order tool needs authorisation)');
    expect(auth.stderr).toContain('check the key and its connected agent in the portal');
    expect(emu.emulator.credits).toBe(before + 2);
    const authTask = emu.emulator.calls.slice(-2).map((c) => emu.emulator.task(c.taskId)!).find((t) => t.to === N.authMidCall)!;
    expect(authTask.state).toBe('canceled');
    expect(authTask.answers).toEqual([]);
  });

  it('SIGINT between the call start and its first event: the task id that follows is canceled (exit 130)', async () => {
    const held = holdFirstEvent(emu.emulator);
    const calls = emu.emulator.calls.length;
    try {
      const r = await cli(['call', '--to', N.ask, '--goal', 'Interrupted', '--base-url', emu.url, '--key-file', keyFile, '--yes'], {}, (child) => {
        void held.placed().then(() => child.kill('SIGINT'));
        // The first event goes out once the CLI has taken the interrupt (it says so), inside its grace.
        let said = '';
        child.stderr?.on('data', (d: Buffer) => {
          said += String(d);
          if (said.includes('interrupted: ending the call')) held.release();
        });
      });
      const taskId = emu.emulator.calls.at(-1)!.taskId;
      expect(r.stderr).toContain('interrupted: ending the call');
      expect(r.stdout).toContain(`interrupted; task ${taskId} was canceled`);
      expect(r.code).toBe(130);
      expect(emu.emulator.task(taskId)!.state).toBe('canceled');
      expect(emu.emulator.calls.length).toBe(calls + 1);
    } finally {
      held.release();
    }
  });

  it('without --yes and without a terminal, a real call is refused before anything is sent (exit 2)', async () => {
    const before = emu.emulator.requests.length;
    const r = await cli(['call', '--to', N.ask, '--goal', 'Offer a day', '--base-url', emu.url, '--key-file', keyFile]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('without confirmation');
    expect(emu.emulator.requests.length).toBe(before);
  });

  it('a key file readable by others is refused (exit 78), a bad number is a usage error (exit 2)', async () => {
    const loose = join(dir, 'loose.key');
    await writeFile(loose, ALICE_KEY);
    await chmod(loose, 0o644);
    const r = await cli(['call', '--to', N.ask, '--goal', 'x', '--base-url', emu.url, '--key-file', loose, '--yes']);
    expect(r.code).toBe(78);
    expect(r.stderr).toContain('chmod 600');
    const bad = await cli(['call', '--to', '03-1234-5678', '--goal', 'x', '--emulator']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('E.164');
  });

  it('a canary key refused by the service never appears in any output', async () => {
    const canary = 'tba_live_CLICANARY_8d1f2a';
    const canaryFile = join(dir, 'canary.key');
    await writeFile(canaryFile, canary, { mode: 0o600 });
    const before = emu.emulator.credits;
    const r = await cli(['call', '--to', N.ask, '--goal', 'x', '--base-url', emu.url, '--key-file', canaryFile, '--yes']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('UNAUTHORIZED');
    expect(r.stdout + r.stderr).not.toContain('CLICANARY');
    expect(emu.emulator.credits).toBe(before);
  });

  it('numbers outside alerts.call.allowed_numbers of the configuration are refused (exit 2)', async () => {
    const config = join(dir, 'connector.yaml');
    await writeFile(
      config,
      [
        `state_dir: ${join(dir, 'state')}`,
        'datasets:',
        '  shop-1:',
        '    api: { base_url: "http://127.0.0.1:8787", key: { env: SHOP_1_KEY } }',
        '    source: { type: csv }',
        '    mapping: { fields: { record_id: SKU, display_name: Name, api_value: SKU } }',
        'alerts:',
        '  call:',
        '    enabled: false',
        `    to: "${N.ask}"`,
        '    key: { env: A2A_KEY }',
        `    base_url: "${emu.url}"`,
        `    allowed_numbers: ["${N.ask}"]`,
      ].join('\n'),
    );
    const refused = await cli(['--config', config, 'call', '--to', N.plain, '--goal', 'x', '--emulator']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('allowed_numbers');
    const allowed = await cli(['--config', config, 'call', '--to', N.ask, '--goal', 'Offer a day', '--yes', '--answers', answers1], { A2A_KEY: ALICE_KEY });
    expect(allowed.stderr).toBe('');
    expect(allowed.code).toBe(0);
  });
});
