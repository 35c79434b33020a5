import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/server.js';
import { chain, headOffice } from '../daemon/fan-out-helpers.js';
import { drop, until } from '../daemon/service-harness.js';
import { runCli } from '../cli/run-cli.js';
import { DaemonProcess, emulator } from './harness.js';

// Issue 13's fan-out with the real CLI: a daemon killed (SIGKILL) between the datasets taking a file
// resumes only the datasets not done; `sync --export` runs the fan-out by hand.
describe('fan-out: crash between datasets, and sync --export (child processes)', () => {
  let emu: RunningEmulator;
  beforeAll(async () => {
    emu = await emulator();
  });
  afterAll(async () => {
    await emu.close();
  });
  const writes = (id: string) => emu.emulator.requests.filter((r) => r.method !== 'GET' && r.path.includes(`/${id}/`) || (r.method !== 'GET' && r.path.endsWith(`/${id}`))).length;

  it('SIGKILL while the second dataset syncs: the restart runs store-002 and store-003 only, and archives the file once', async () => {
    const c = await chain(emu, 'kill', { settleMs: 250, pollMs: 50, log: 'info' });
    // store-002's requests hang, so the kill lands after store-001 is done and before store-002 is.
    emu.emulator.faults.add({ path: /kill-store-2/, delayMs: 60_000, count: Infinity });
    const first = new DaemonProcess(['run', '--config', c.configPath], c.env);
    await drop(c.inbox, 'stock-9.csv', headOffice(() => 4));
    await first.waitFor('sync.summary', { dataset: 'store-001', result: 'published' }, 1, 60_000);
    // store-002 has begun (its first request hangs in the emulator): the kill lands between the datasets' syncs.
    await until(() => emu.emulator.requests.some((r) => r.path.includes('kill-store-2')), 'store-002 begun', first.lines);
    expect(await first.stop('SIGKILL')).toBe(null);
    emu.emulator.faults.clear();
    // The file was read once for the three: the killed process's scratch of that read is left behind.
    const plans = join(c.dir, 'state', 'state.db.plans');
    const scratch = async () => (await readdir(plans)).filter((n) => n.startsWith('shared.'));
    expect(await scratch()).toHaveLength(1);
    expect(c.stocks(0)).toEqual({ A1: 4, A2: 4 });
    expect(await readdir(c.inbox)).toEqual(['stock-9.csv']);
    const store1Writes = writes(c.ids[0]!);

    const second = new DaemonProcess(['run', '--config', c.configPath], c.env);
    try {
      const done = await second.waitFor('file.processed', { export: 'ho' }, 1, 60_000);
      // Each dataset's result with this file: store-001's from before the kill (it is not run again: no write below).
      expect(done.takers).toEqual(['store-001: published', 'store-002: published', 'store-003: published']);
      expect(c.stocks(1)).toEqual({ B1: 4, B2: 4 });
      expect(c.stocks(2)).toEqual({ A1: 104, A2: 104, B1: 104, B2: 104 });
      expect(writes(c.ids[0]!)).toBe(store1Writes);
      expect(await readdir(c.inbox)).toEqual(['processed']);
      expect(await readdir(join(c.inbox, 'processed'))).toHaveLength(1);
      // The restart read it once for the two not done, and removed the dead process's scratch.
      expect(second.lines.filter((l) => l.event === 'file.read').map((l) => l.takers)).toEqual([['store-002/stock', 'store-003/stock']]);
      expect(await scratch()).toEqual([]);
    } finally {
      await second.stop();
    }
  }, 180_000);

  it('sync --export runs every dataset taking the file, then none again for the same file; sync <dataset> --feed reads a from feed with its rows', async () => {
    const c = await chain(emu, 'cli');
    const file = await drop(c.dir, 'stock-5.csv', headOffice(() => 3));
    const first = await runCli(['sync', '--export', 'ho', '--file', file, '--config', c.configPath], c.env);
    expect(first.code, first.stderr).toBe(0);
    expect(c.stocks(0)).toEqual({ A1: 3, A2: 3 });
    expect(c.stocks(1)).toEqual({ B1: 3, B2: 3 });
    expect(c.stocks(2)).toEqual({ A1: 103, A2: 103, B1: 103, B2: 103 });
    // The file is never moved by hand-run syncs.
    expect((await readdir(c.dir)).includes('stock-5.csv')).toBe(true);

    const before = emu.emulator.requests.length;
    const again = await runCli(['sync', '--export', 'ho', '--file', file, '--config', c.configPath, '--json'], c.env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.split('\n').filter((l) => l.includes('"file.skipped"') && l.includes('same_content'))).toHaveLength(3);
    expect(emu.emulator.requests.length).toBe(before);

    const one = await drop(c.dir, 'stock-6.csv', headOffice(() => 8));
    const single = await runCli(['sync', 'store-001', '--feed', 'stock', '--file', one, '--config', c.configPath], c.env);
    expect(single.code, single.stderr).toBe(0);
    expect(c.stocks(0)).toEqual({ A1: 8, A2: 8 });

    expect((await runCli(['sync', '--export', 'nope', '--file', file, '--config', c.configPath], c.env)).code).toBe(2);
    expect((await runCli(['sync', 'store-001', '--export', 'ho', '--file', file, '--config', c.configPath], c.env)).code).toBe(2);
  }, 120_000);
});
