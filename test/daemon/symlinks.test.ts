import { mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { capture, daemonFixture, drop, events, exportCsv, ManualClock, serviceScenario, waitEvent } from './service-harness.js';

// Issue 11 point 6: a link in the export folder to a file elsewhere is not read, not published, not quoted.
describe('daemon: a symbolic link in the watch folder', () => {
  const fx = daemonFixture();
  const SECRET = 'root:x:0:0:SECRET-7f3a9c1e-do-not-log:/root:/bin/bash';

  it('is skipped with one log line naming it; its target appears in no log line and nothing of it is published', async () => {
    const s = await serviceScenario(fx.emu, 'links-1');
    const outside = join(s.dir, 'outside');
    await mkdir(outside);
    const secret = join(outside, 'passwd');
    // Shaped like an export, so that followed it would be read and published.
    await writeFile(secret, `sku,name,code,stock\nP-9999,${SECRET},x,1\n`);
    await s.writeConfig({ shop: s.dataset() });
    const log = capture();
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: new ManualClock() });
    fx.services.push(service);

    const link = join(s.inbox, 'stock.csv');
    await symlink(secret, link);
    await waitEvent(log.lines, 'file.skipped', { file: link, reason: 'symlink' });
    const real = await drop(s.inbox, 'real.csv', exportCsv(3));
    await waitEvent(log.lines, 'sync.summary', { result: 'published', rows: 3 });
    await waitEvent(log.lines, 'file.processed', { file: real });

    expect(fx.emu.emulator.records('links-1').map((r) => r.record_id)).toEqual(['P-0001', 'P-0002', 'P-0003']);
    expect(events(log.lines, 'file.skipped', { file: link })).toHaveLength(1);
    expect(events(log.lines, 'file.ready').map((l) => l.file)).toEqual([real]);
    expect(log.raw()).not.toContain('SECRET');
    // Left alone: the link stays, its target is untouched.
    expect((await readdir(s.inbox)).sort()).toEqual(['processed', 'stock.csv']);
    expect(await readFile(secret, 'utf8')).toContain(SECRET);
  });
});
