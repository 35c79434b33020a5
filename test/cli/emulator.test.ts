import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

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

  it('without --dataset or --seed: usage error', async () => {
    const child = spawn(process.execPath, ['dist/cli/main.js', 'emulator'], { cwd: root, stdio: 'ignore' });
    expect(await new Promise((r) => child.once('exit', r))).toBe(2);
  });
});
