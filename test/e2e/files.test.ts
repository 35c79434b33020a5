import { open, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningEmulator } from '../../src/emulator/server.js';
import { DaemonProcess, emulator, exportCsv, scenario, type Scenario } from './harness.js';

// One daemon for the file scenarios, taken in order: each step waits for the previous one's log line.
describe('daemon end to end: watched folder', () => {
  let emu: RunningEmulator;
  let s: Scenario;
  let d: DaemonProcess;
  const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

  beforeAll(async () => {
    emu = await emulator();
    s = await scenario(emu, 'e2e-files');
    // settle_ms well above the gaps of the slow writer below, so a loaded machine does not split it.
    await s.writeConfig({ shop: s.dataset({ watch: { path: s.inbox, include: ['*.csv'], settle_ms: 700, poll_interval_ms: 50 } }) });
    d = s.start();
    await d.waitFor('daemon.started');
  });

  afterAll(async () => {
    await d?.stop();
    await emu?.close();
  });

  it('reads a file written slowly in chunks once, complete', async () => {
    const fh = await open(join(s.inbox, 'stock.csv'), 'w');
    const text = exportCsv(40);
    const chunk = Math.ceil(text.length / 5);
    for (let i = 0; i < text.length; i += chunk) {
      await fh.write(text.slice(i, i + chunk));
      await fh.sync();
      await tick(60);
    }
    await fh.close();
    const summary = await d.waitFor('sync.summary');
    expect(summary).toMatchObject({ result: 'published', rows: 40, adds: 40, rowErrors: 0 });
    await d.waitFor('file.processed');
    expect(d.events('sync.summary')).toHaveLength(1);
    expect(d.events('file.ready')).toHaveLength(1);
    expect(emu.emulator.records('e2e-files')).toHaveLength(40);
    expect(await readdir(s.inbox)).toEqual(['processed']);
  });

  it('skips a file whose content equals the last one processed', async () => {
    const writes = emu.emulator.counters.recordWrites;
    await writeFile(join(s.inbox, 'stock.csv'), exportCsv(40));
    const skipped = await d.waitFor('file.skipped', { reason: 'same_content' });
    expect(skipped.file).toBe(join(s.inbox, 'stock.csv'));
    await d.waitFor('file.processed', {}, 2);
    expect(d.events('sync.summary')).toHaveLength(1);
    expect(emu.emulator.counters.recordWrites).toBe(writes);
  });

  it('moves a file with bad rows to failed/ with its reject file, publishing nothing from it', async () => {
    const before = emu.emulator.records('e2e-files');
    // The bad value is a spreadsheet formula: the reject file must not let a spreadsheet run it.
    await writeFile(join(s.inbox, 'stock.csv'), exportCsv(41, { stock: (i) => (i === 7 ? '=1+2' : i === 9 ? '@SUM(A1)' : '1') }));
    const rejected = await d.waitFor('file.rejected', { fate: 'failed' });
    const failed = await readdir(join(s.inbox, 'failed'));
    expect(failed).toHaveLength(2);
    expect(failed.some((n) => /^stock\.\d{8}-\d{6}\.csv$/.test(n))).toBe(true);
    expect(failed.some((n) => /^stock\.\d{8}-\d{6}\.rejected\.csv$/.test(n))).toBe(true);
    expect(rejected.rejectFile).toMatch(/failed\/stock\.\d{8}-\d{6}\.rejected\.csv$/);
    expect(d.events('sync.summary', { result: 'rejected' })).toHaveLength(1);
    // Issue 17: the log line says which rows and why, not only how many.
    const [read] = d.events('file.rejected').filter((l) => l.fate === undefined);
    expect(read).toMatchObject({
      row_errors: 2,
      first_row_errors: [
        { line: 8, column: 'stock', code: expect.any(String), reason: expect.any(String) },
        { line: 10, column: 'stock', code: expect.any(String), reason: expect.any(String) },
      ],
    });
    const rejects = (await readFile(String(rejected.rejectFile), 'utf8')).replace(/^\uFEFF/, '').split('\r\n');
    expect(rejects.some((l) => l.includes("'=1+2"))).toBe(true);
    expect(rejects.some((l) => l.includes("'@SUM(A1)"))).toBe(true);
    const cells = rejects.flatMap((l) => l.split(',')).map((c) => c.replace(/^"/, ''));
    expect(cells.filter((c) => /^[=+@\t\r-]/.test(c))).toEqual([]);
    expect(emu.emulator.records('e2e-files')).toEqual(before);
  });
});
