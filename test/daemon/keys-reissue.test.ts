import { randomBytes } from 'node:crypto';
import { rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { createEmulatorClock, keyFingerprint, startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { capture, drop, events, exportCsv, serviceScenario, waitEvent, type ServiceScenario } from './service-harness.js';

// A shop reissues its dataset key in the portal with a grace period (spec: at most 24 hours) and writes
// the new key to the key file. The daemon picks it up without a restart: on SIGHUP, and at the latest
// when the old key starts getting 401 (src/config/key.ts rereadKey, used by the API client on a 401).

const HOUR = 3_600_000;

/** Replace the key file the way an operator's editor or script would: a new 0600 file renamed over the old. */
async function writeKeyFile(path: string, key: string): Promise<void> {
  await writeFile(`${path}.new`, `${key}\n`, { mode: 0o600 });
  await rename(`${path}.new`, path);
}

describe('daemon: a dataset key reissued with a grace period', () => {
  let emu: RunningEmulator;
  beforeAll(async () => {
    // The emulator's clock stands still until advanced: the grace ends exactly when the test says.
    emu = await startEmulator({ port: 0, clock: createEmulatorClock({ mode: 'manual', startMs: Date.UTC(2025, 5, 2, 1) }) });
  });
  afterAll(async () => {
    await emu?.close();
  });

  async function start(id: string): Promise<{ s: ServiceScenario; keyFile: string; oldKey: string; newKey: string; log: ReturnType<typeof capture>; service: Service }> {
    const s = await serviceScenario(emu, id);
    const oldKey = s.env.DATASET_KEY!;
    const newKey = `tbd_live_${randomBytes(16).toString('hex')}`;
    const keyFile = join(s.dir, 'shop.key');
    await writeKeyFile(keyFile, oldKey);
    const ds = s.dataset();
    // The key comes from the file only: the variable the harness sets is not named.
    await s.writeConfig({ shop: { ...ds, api: { ...(ds.api as object), key: { file: keyFile } } } });
    const log = capture();
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: {} });
    await drop(s.inbox, 'stock-1.csv', exportCsv(3, 1));
    await waitEvent(log.lines, 'sync.summary', { result: 'published' });
    return { s, keyFile, oldKey, newKey, log, service };
  }

  const byKey = (key: string) => emu.emulator.requests.filter((r) => r.keyFingerprint === keyFingerprint(key));

  it('after the grace: the next sync gets one 401, reads the key file again and publishes with the new key; nothing lost or doubled', async () => {
    const { s, keyFile, oldKey, newKey, log, service } = await start('reissue-401');
    try {
      emu.emulator.reissueKey({ key: oldKey, graceMs: 4 * HOUR, newKey });
      await writeKeyFile(keyFile, newKey);
      emu.emulator.clock.advance(4 * HOUR); // the old key now gets 401
      const writes = emu.emulator.counters.recordWrites;
      const oldSeen = byKey(oldKey).length;

      await drop(s.inbox, 'stock-2.csv', exportCsv(4, 7)); // three changes and one add
      const summary = await waitEvent(log.lines, 'sync.summary', { result: 'published' }, 2);
      expect(summary).toMatchObject({ dataset: 'shop' });

      expect(emu.emulator.records('reissue-401').map((r) => [r.record_id, r.attributes.stock])).toEqual([
        ['P-0001', 7],
        ['P-0002', 7],
        ['P-0003', 7],
        ['P-0004', 7],
      ]);
      expect(emu.emulator.counters.recordWrites - writes).toBe(4);
      // Exactly one request was refused, the first after the grace; every later one carried the new key.
      expect(byKey(oldKey).slice(oldSeen).map((r) => r.status)).toEqual([401]);
      expect(byKey(newKey).length).toBeGreaterThanOrEqual(4);
      expect(byKey(newKey).every((r) => r.status !== null && r.status < 400)).toBe(true);
      expect(events(log.lines, 'api.retry', { status: 401, reason: 'key_changed' })).toHaveLength(1);
      expect(events(log.lines, 'dataset.stopped')).toEqual([]);
      expect(service.health.report().reasons).toEqual([]);
      expect(log.raw()).not.toContain(oldKey);
      expect(log.raw()).not.toContain(newKey);
    } finally {
      await service.stop();
      await rm(s.dir, { recursive: true, force: true });
    }
  });

  it('SIGHUP (reload) during the grace: the new key is used from the next request, the old one is never refused', async () => {
    const { s, keyFile, oldKey, newKey, log, service } = await start('reissue-hup');
    try {
      emu.emulator.reissueKey({ key: oldKey, graceMs: 4 * HOUR, newKey });
      await writeKeyFile(keyFile, newKey);
      expect(await service.reload()).toBe(true);
      const oldSeen = byKey(oldKey).length;

      await drop(s.inbox, 'stock-2.csv', exportCsv(4, 5));
      await waitEvent(log.lines, 'sync.summary', { result: 'published' }, 2);
      emu.emulator.clock.advance(4 * HOUR);
      await drop(s.inbox, 'stock-3.csv', exportCsv(5, 5));
      await waitEvent(log.lines, 'sync.summary', { result: 'published' }, 3);

      expect(byKey(oldKey)).toHaveLength(oldSeen);
      expect(byKey(oldKey).every((r) => r.status !== 401)).toBe(true);
      expect(emu.emulator.records('reissue-hup')).toHaveLength(5);
      expect(events(log.lines, 'api.retry', { status: 401 })).toEqual([]);
      expect(log.raw()).not.toContain(oldKey);
      expect(log.raw()).not.toContain(newKey);
    } finally {
      await service.stop();
      await rm(s.dir, { recursive: true, force: true });
    }
  });
});
