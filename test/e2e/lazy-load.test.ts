import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DaemonProcess, emulatorFixture, exportCsv, scenario } from './harness.js';

const REGISTER = pathToFileURL(join(import.meta.dirname, 'module-log/register.mjs')).href;

// Issue 12: a production daemon never loads the demo, the embedded emulator or exceljs
// (0.6 s and 169 packages at every start when it did).
describe('daemon end to end: what a production run loads', () => {
  const fx = emulatorFixture();

  it('a run on a production config syncs without loading exceljs, the emulator, the demo or (without call alerts) the call client', async () => {
    const s = await scenario(fx.emu, 'e2e-lazy');
    await s.writeConfig({ shop: s.dataset() });
    const log = join(await mkdtemp(join(tmpdir(), 'dc-modules-')), 'modules.txt');
    const d = new DaemonProcess(['run', '--config', s.configPath], { ...s.env, NODE_OPTIONS: `--import=${REGISTER}`, DC_MODULE_LOG: log });
    try {
      await d.waitFor('daemon.started');
      await writeFile(join(s.inbox, 'stock.csv'), exportCsv(5));
      expect(await d.waitFor('sync.summary')).toMatchObject({ result: 'published' });
    } finally {
      await d.stop();
    }
    const loaded = (await readFile(log, 'utf8')).split('\n');
    // The hook saw the daemon itself (so an empty list below means something).
    expect(loaded.some((u) => u.endsWith('/dist/daemon/service.js'))).toBe(true);
    expect(loaded.some((u) => u.endsWith('/dist/sync/engine.js') || u.includes('/dist/sync/'))).toBe(true);
    expect(loaded.filter((u) => /\/node_modules\/exceljs\/|\/dist\/emulator\/|\/dist\/daemon\/demo\.js$/.test(u))).toEqual([]);
    // Issue 18: without call alerts in the config, the call client (src/a2a) stays out of the daemon's memory.
    expect(loaded.filter((u) => /\/dist\/alerts\/alerts\.js$|\/dist\/a2a\/(client|conversation|transport)\.js$/.test(u))).toEqual([]);
  });
});
