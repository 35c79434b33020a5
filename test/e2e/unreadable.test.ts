import { chmod, chown, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { emulatorFixture, exportCsv, freePort, scenario } from './harness.js';

/** The user the daemon runs as: nobody when the tests run as root (root reads any file), else the test's own. */
const asRoot = process.getuid?.() === 0;
const NOBODY = 65534;

// An export the service user may not read is not "gone".
describe('daemon end to end: an unreadable export', () => {
  const fx = emulatorFixture();

  it('is reported as FILE_UNREADABLE with its errno and what to grant, shown in /healthz, kept and retried', async () => {
    const s = await scenario(fx.emu, 'e2e-unreadable');
    const port = await freePort();
    await s.writeConfig({ shop: s.dataset() }, { health: { listen: `127.0.0.1:${port}` } });
    if (asRoot) for (const p of [s.dir, s.inbox, s.configPath]) await chown(p, NOBODY, NOBODY);
    const d = s.start(asRoot ? { uid: NOBODY, gid: NOBODY } : {});
    try {
      await d.waitFor('daemon.started');
      // Root-owned (or our own) 0600, then 0000 for a non-root run: the daemon's user cannot read it.
      const file = join(s.inbox, 'stock.csv');
      await writeFile(file, exportCsv(3), { mode: 0o600 });
      if (!asRoot) await chmod(file, 0o000);
      const line = await d.waitFor('file.unreadable');
      expect(line).toMatchObject({ file, code: 'EACCES' });
      expect(String(line.hint)).toContain('read access');
      await d.waitFor('sync.retry_scheduled', { file });
      expect(d.events('file.skipped')).toEqual([]);
      const health = (await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()) as Record<string, unknown>;
      expect(health).toMatchObject({
        status: 'degraded',
        reasons: [{ dataset: 'shop', topic: 'file', code: 'FILE_UNREADABLE', message: expect.stringContaining(file) }],
      });
      expect(await readdir(s.inbox)).toEqual(['stock.csv']);
      expect(fx.emu.emulator.counters.recordWrites).toBe(0);
    } finally {
      expect(await d.stop()).toBe(0);
    }
  });
});
