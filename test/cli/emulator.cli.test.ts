import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { A2aClient } from '../../src/a2a/client.js';
import { runCall } from '../../src/a2a/conversation.js';
import { Secret } from '../../src/secret.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('dataset-connector emulator', () => {
  it('prints its URL, serves the dataset with the given key, stops on SIGTERM with exit 0', async () => {
    const key = 'tbd_live_emulator_cli_12345';
    const child = spawn(process.execPath, ['dist/cli/main.js', 'emulator', '--port', '0', '--dataset', 'shop-1', '--key', key, '--roles', 'read,write'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += String(d);
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m && out.includes('Ctrl-C')) resolve(m[1]!);
      });
      child.once('exit', (code) => reject(new Error(`emulator exited early (${code}): ${out}`)));
    });
    const res = await fetch(`${url}/api/v1/business-datasets/shop-1`, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ dataset_id: 'shop-1' });
    expect(out).not.toContain(key);
    const code = await new Promise<number | null>((resolve) => {
      child.once('exit', (c) => resolve(c));
      child.kill('SIGTERM');
    });
    expect(code).toBe(0);
  });

  it('without --dataset, --seed or --a2a-port: usage error; an unknown --a2a-mode is one too', async () => {
    const child = spawn(process.execPath, ['dist/cli/main.js', 'emulator'], { cwd: root, stdio: 'ignore' });
    expect(await new Promise((r) => child.once('exit', r))).toBe(2);
    const bad = spawn(process.execPath, ['dist/cli/main.js', 'emulator', '--a2a-port', '0', '--a2a-mode', 'sloppy'], { cwd: root, stdio: 'ignore' });
    expect(await new Promise((r) => bad.once('exit', r))).toBe(2);
  });

  it('--a2a-port with --a2a-mode: the call emulator runs in that server behaviour, switchable at its admin route', async () => {
    const key = 'a2a_emulator_cli_test_key';
    const child = spawn(
      process.execPath,
      ['dist/cli/main.js', 'emulator', '--a2a-port', '0', '--a2a-key', key, '--a2a-mode', 'lag-after-answer', '--a2a-mode', 'final-without-close'],
      { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        out += String(d);
        const m = /call emulator \(A2A\) listening on (http:\/\/\S+):/.exec(out);
        if (m && out.includes('Ctrl-C')) resolve(m[1]!);
      });
      child.once('exit', (code) => reject(new Error(`emulator exited early (${code}): ${out}`)));
    });
    expect(out).toContain('server behaviour: lag-after-answer, final-without-close');
    const modes = (await (await fetch(`${url}/__emulator/modes`)).json()) as { modes: Record<string, unknown> };
    expect(modes.modes).toMatchObject({ lagAfterAnswerReads: 2, keepOpenAfterFinal: true });
    // A call through it: each of the demo script's two questions answered once, one credit.
    const client = new A2aClient({ baseUrl: url, key: new Secret(key) });
    const outcome = await runCall(client, { to: '+81300000001', goal: 'Try the modes' }, { answer: async () => 'Yes', waits: { firstWaitMs: 10, maxWaitMs: 10 } });
    await client.close();
    expect(outcome).toMatchObject({ state: 'completed', answers: 2 });
    const calls = (await (await fetch(`${url}/__emulator/calls`)).json()) as { credits: number; calls: Array<{ answers: string[] }> };
    expect(calls.credits).toBe(1);
    expect(calls.calls[0]!.answers).toEqual(['Yes', 'Yes']);
    const switched = await fetch(`${url}/__emulator/modes`, { method: 'POST', body: JSON.stringify({ presets: ['refused-resubscribe'] }) });
    expect(((await switched.json()) as { modes: Record<string, unknown> }).modes).toMatchObject({ endedResubscribe: 'terminal-state', lagAfterAnswerReads: 0 });
    const code = await new Promise<number | null>((resolve) => {
      child.once('exit', (c) => resolve(c));
      child.kill('SIGTERM');
    });
    expect(code).toBe(0);
  });
});
