import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { capture, daemonFixture, drop, exportCsv, serviceScenario, waitEvent } from './service-harness.js';

const modeOf = async (p: string) => (await stat(p)).mode & 0o777;

// Outside systemd (no StateDirectoryMode=, UMask=) the snapshot is not readable by others.
describe('daemon: the state folder it creates', () => {
  const fx = daemonFixture();

  it('is 0700, with state.db and its WAL 0600, whatever the umask', async () => {
    const s = await serviceScenario(fx.emu, 'state-mode');
    const stateDir = join(s.dir, 'var', 'state');
    await s.writeConfig({ shop: s.dataset() }, { state_dir: stateDir });
    const log = capture();
    const umask = process.umask(0o022);
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env });
    try {
      await drop(s.inbox, 'stock.csv', exportCsv(2));
      await waitEvent(log.lines, 'sync.summary', { result: 'published' });
      expect(await modeOf(stateDir)).toBe(0o700);
      expect(await modeOf(join(stateDir, 'state.db'))).toBe(0o600);
      expect(await modeOf(join(stateDir, 'state.db-wal'))).toBe(0o600);
    } finally {
      await service.stop();
      process.umask(umask);
    }
  });

  // The daemon leaves making them to openStateDb (8943892), which sets the modes exactly: a step that made
  // them first through the umask (the old prepareStateDir) left a 0500 folder and a 0400 file here, which
  // openStateDb then found existing and kept (and which a non-root service user cannot write).
  it('are exactly 0700 and 0600 even under a umask that takes the owner\'s own bits', async () => {
    const s = await serviceScenario(fx.emu, 'state-umask');
    const stateDir = join(s.dir, 'var', 'state');
    await s.writeConfig({ shop: s.dataset() }, { state_dir: stateDir });
    const umask = process.umask(0o277);
    try {
      const service = await Service.start({ configPath: s.configPath, logger: capture().logger, env: s.env });
      fx.services.push(service);
      expect(await modeOf(join(s.dir, 'var'))).toBe(0o700);
      expect(await modeOf(stateDir)).toBe(0o700);
      expect(await modeOf(join(stateDir, 'state.db'))).toBe(0o600);
    } finally {
      process.umask(umask);
    }
  });
});
