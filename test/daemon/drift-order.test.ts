import { createHash } from 'node:crypto';
import { readdir, readFile, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import {
  capture,
  daemonFixture,
  drop,
  events,
  exportCsv,
  ManualClock,
  manualCron,
  portalDrift,
  RECONCILE,
  serviceScenario,
  type ServiceScenario,
  stocks,
  waitEvent,
} from './service-harness.js';

// Drift repair must never publish the older, archived export over a newer one
// that waits for its retry (review of 5c00c4d/d2b627f, item 1). The archived
// copy is given a fresh modification time, as moveFile's copy fallback across
// file systems (EXDEV) leaves it, so newer-file-wins by mtime would pick it.
describe('daemon: drift repair and an export waiting for its retry', () => {
  const fx = daemonFixture();
  afterEach(() => fx.emu.emulator.faults.clear());

  /**
   * The last export P (stock 3) is processed and its archive copy gets a fresh
   * mtime; the newer export N (stock 5, written while P synced, so older than
   * the copy) fails with 503 and waits for its retry; then the portal drifts.
   */
  async function newerExportWaitsForRetry(s: ServiceScenario) {
    await s.writeConfig({ shop: s.dataset({ schedules: RECONCILE }) });
    const log = capture();
    const timers = new ManualClock();
    const cron = manualCron();
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: timers, cronStarter: cron.starter });
    fx.services.push(service);
    const t0 = Date.now() - 120_000;
    await drop(s.inbox, 'stock.csv', exportCsv(4, 3), t0);
    await waitEvent(log.lines, 'file.processed');
    const [archivedName] = await readdir(join(s.inbox, 'processed'));
    const archived = join(s.inbox, 'processed', archivedName!);
    const now = new Date();
    await utimes(archived, now, now);

    fx.emu.emulator.faults.add({ path: new RegExp(s.datasetId), status: 503, count: Infinity });
    await drop(s.inbox, 'stock-new.csv', exportCsv(4, 5), t0 + 60_000);
    await waitEvent(log.lines, 'sync.retry_scheduled');
    await service.datasets.idle();
    fx.emu.emulator.faults.clear();
    expect(timers.labels()).toContain('retry');
    portalDrift(fx.emu, s.datasetId);
    return { service, lines: log.lines, timers, cron, archived, hash: createHash('sha256').update(await readFile(archived)).digest('hex') };
  }

  /** The retry of N is fired: N is published and archived as processed, never as superseded. */
  async function newerExportWins(s: ServiceScenario, w: Awaited<ReturnType<typeof newerExportWaitsForRetry>>) {
    expect(await readdir(s.inbox)).toContain('stock-new.csv');
    expect(w.timers.fire('retry')).toBe(1);
    await waitEvent(w.lines, 'file.processed', { file: join(s.inbox, 'stock-new.csv') });
    await w.service.datasets.idle();
    expect(stocks(fx.emu, s.datasetId)).toEqual({ 'P-0001': 5, 'P-0002': 5, 'P-0003': 5, 'P-0004': 5 });
    const processed = await readdir(join(s.inbox, 'processed'));
    expect(processed.filter((n) => n.includes('.superseded.'))).toEqual([]);
    expect(processed.filter((n) => n.startsWith('stock-new.'))).toHaveLength(1);
  }

  it('the reconcile only clears the marker (export_waiting): the waiting export is synced at its retry, the archived one is not re-queued', async () => {
    const s = await serviceScenario(fx.emu, 'drift-retry');
    const w = await newerExportWaitsForRetry(s);
    w.cron.fire();
    expect(await waitEvent(w.lines, 'reconcile.reapply')).toMatchObject({ action: 'marker_cleared', reason: 'export_waiting', edited: 1, deleted: 1, file_hash: w.hash });
    await w.service.datasets.idle();
    expect(events(w.lines, 'file.ready', { origin: 'reapply' })).toEqual([]);
    await newerExportWins(s, w);
    // The archived copy stays where it was.
    expect((await stat(w.archived)).isFile()).toBe(true);
  });

  it('a reapply that reaches the runtime while an export waits for its retry is dropped, not the waiting export', async () => {
    const s = await serviceScenario(fx.emu, 'drift-retry-push');
    const w = await newerExportWaitsForRetry(s);
    const archived = await stat(w.archived);
    const runtime = w.service.datasets.get('shop')!;
    runtime.push({ kind: 'file', origin: 'reapply', file: { path: w.archived, name: 'archived.csv', size: archived.size, mtimeMs: archived.mtimeMs }, reapplyOf: w.hash });
    expect(await waitEvent(w.lines, 'file.skipped', { origin: 'reapply' })).toMatchObject({ reason: 'retry_pending', file: w.archived });
    await w.service.datasets.idle();
    expect(w.timers.labels()).toContain('retry');
    await newerExportWins(s, w);
  });
});
