import { randomBytes } from 'node:crypto';
import { readdir, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { createEmulatorClock, keyFingerprint, startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { capture, drop, events, exportCsv, freePort, healthz, ManualClock, serviceScenario, waitEvent } from './service-harness.js';

// A dataset stopped (a 401 after a key's grace ended, a dataset_id typo) keeps its export for the slow
// retry (15 minutes by default). The operator's fix arrives with a reload: a new key in the key file, or
// a corrected config. That reload retries the held export at once, through the queue.
// ManualClock: the retry timer never fires here, so a publish can only come from the reload.

const MINUTE = 60_000;

/** Replace the key file the way an operator's editor or script would: a new 0600 file renamed over the old. */
async function writeKeyFile(path: string, key: string): Promise<void> {
  await writeFile(`${path}.new`, `${key}\n`, { mode: 0o600 });
  await rename(`${path}.new`, path);
}

describe('daemon: a reload that fixes a stopped dataset retries its export at once', () => {
  let emu: RunningEmulator;
  const services: Service[] = [];
  beforeAll(async () => {
    // The emulator's clock stands still until advanced: the grace ends exactly when the test says.
    emu = await startEmulator({ port: 0, clock: createEmulatorClock({ mode: 'manual', startMs: Date.UTC(2025, 5, 2, 1) }) });
  });
  afterEach(async () => {
    await Promise.all(services.splice(0).map((s) => s.stop()));
  });
  afterAll(async () => {
    await emu?.close();
  });

  const writesOf = (datasetId: string) =>
    emu.emulator.requests.filter((r) => r.path.includes(`/${datasetId}/`) && ['POST', 'PATCH', 'DELETE', 'PUT'].includes(r.method));

  it('401 after the grace with the old key still in the file; the new key written, then SIGHUP: the export publishes now, writes not doubled', async () => {
    const s = await serviceScenario(emu, 'stop-401');
    const oldKey = s.env.DATASET_KEY!;
    const newKey = `tbd_live_${randomBytes(16).toString('hex')}`;
    const keyFile = join(s.dir, 'shop.key');
    await writeKeyFile(keyFile, oldKey);
    const ds = s.dataset();
    const port = await freePort();
    await s.writeConfig({ shop: { ...ds, api: { ...(ds.api as object), key: { file: keyFile } } } }, { health: { listen: `127.0.0.1:${port}` } });
    const log = capture();
    const timers = new ManualClock();
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: {}, clock: timers });
    services.push(service);
    await drop(s.inbox, 'stock-1.csv', exportCsv(3, 1));
    await waitEvent(log.lines, 'sync.summary', { result: 'published' });

    // The grace ends before the operator writes the new key: the key file still holds the old one.
    emu.emulator.reissueKey({ key: oldKey, graceMs: MINUTE, newKey });
    emu.emulator.clock.advance(MINUTE);
    const writesBefore = writesOf('stop-401').length;
    await drop(s.inbox, 'stock-2.csv', exportCsv(4, 7)); // three changes and one add
    expect(await waitEvent(log.lines, 'sync.summary', { result: 'stopped' })).toMatchObject({ code: 'UNAUTHORIZED' });
    await waitEvent(log.lines, 'sync.retry_scheduled', { slow: true });
    expect(timers.labels()).toContain('retry');
    expect(await healthz(port)).toMatchObject({
      status: 'degraded',
      reasons: [{ dataset: 'shop', topic: 'sync', code: 'UNAUTHORIZED' }],
    });

    // A reload that changes nothing of the dataset leaves the retry on its schedule.
    expect(await service.reload()).toBe(true);
    expect(events(log.lines, 'sync.retry_now')).toEqual([]);
    expect(timers.labels()).toContain('retry');

    await writeKeyFile(keyFile, newKey);
    expect(await service.reload()).toBe(true);
    expect(events(log.lines, 'sync.retry_now')).toEqual([
      expect.objectContaining({ dataset: 'shop', file: join(s.inbox, 'stock-2.csv'), reason: 'key_changed', slow: true }),
    ]);
    await waitEvent(log.lines, 'sync.summary', { result: 'published' }, 2);
    await waitEvent(log.lines, 'file.processed', {}, 2);
    await service.datasets.idle();

    expect(timers.labels()).not.toContain('retry');
    expect(emu.emulator.records('stop-401').map((r) => [r.record_id, r.attributes.stock])).toEqual([
      ['P-0001', 7],
      ['P-0002', 7],
      ['P-0003', 7],
      ['P-0004', 7],
    ]);
    // Exactly the planned writes, each once, all with the new key; the stopped sync wrote nothing.
    const planned = events(log.lines, 'sync.planned').at(-1)!;
    expect(planned).toMatchObject({ adds: 1, changes: 3, deletes: 0 });
    const writes = writesOf('stop-401').slice(writesBefore);
    // The new key has not shown what it does with publish=false: its first change goes staged, then one publish (issue 11).
    expect(writes.filter((w) => w.path.includes('/records')).map((w) => w.method).sort()).toEqual(['PATCH', 'PATCH', 'PATCH', 'POST']);
    expect(writes.filter((w) => !w.path.includes('/records')).map((w) => [w.method, w.path.replace(/.*\/stop-401/, '')])).toEqual([['POST', expect.stringMatching(/^\/versions\/\d+\/publish$/)]]);
    expect(writes.every((w) => w.status !== null && w.status < 400 && w.keyFingerprint === keyFingerprint(newKey))).toBe(true);
    const idem = writes.map((w) => w.idempotencyKey).filter((k) => k !== null);
    expect(new Set(idem).size).toBe(idem.length);
    expect(events(log.lines, 'sync.summary').map((l) => l.result)).toEqual(['published', 'stopped', 'published']);
    expect(await readdir(s.inbox)).toEqual(['processed']);
    // /healthz: the 401 stop is over.
    expect(await healthz(port)).toMatchObject({ status: 'ok', reasons: [] });
    expect(log.raw()).not.toContain(oldKey);
    expect(log.raw()).not.toContain(newKey);
  });

  it('a dataset_id typo stops the dataset (404); the corrected config, reloaded, retries the export at once', async () => {
    const s = await serviceScenario(emu, 'stop-404');
    const ds = s.dataset();
    await s.writeConfig({ shop: { ...ds, api: { ...(ds.api as object), dataset_id: 'stop-4O4' } } });
    const log = capture();
    const timers = new ManualClock();
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: timers });
    services.push(service);
    await drop(s.inbox, 'stock.csv', exportCsv(3, 5));
    expect(await waitEvent(log.lines, 'sync.summary', { result: 'stopped' })).toMatchObject({ code: 'DATASET_NOT_FOUND' });
    await waitEvent(log.lines, 'sync.retry_scheduled', { slow: true });
    expect(service.health.report().reasons).toMatchObject([{ dataset: 'shop', topic: 'sync', code: 'DATASET_NOT_FOUND' }]);

    await s.writeConfig({ shop: ds });
    expect(await service.reload()).toBe(true);
    expect(events(log.lines, 'sync.retry_now')).toEqual([expect.objectContaining({ reason: 'config_changed', slow: true })]);
    await waitEvent(log.lines, 'sync.summary', { result: 'published' });
    await service.datasets.idle();
    expect(timers.labels()).not.toContain('retry');
    expect(emu.emulator.records('stop-404')).toHaveLength(3);
    expect(events(log.lines, 'sync.summary').map((l) => l.result)).toEqual(['stopped', 'published']);
    expect(service.health.report().reasons).toEqual([]);
  });
});
