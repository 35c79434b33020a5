import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import type { DatasetRecord } from '../../src/model/record.js';
import type { CronStarter } from '../../src/triggers/scheduler.js';
import {
  capture,
  daemonFixture,
  drop,
  events,
  exportCsv,
  freePort,
  healthz,
  type Line,
  manualCron,
  portalDrift,
  RECONCILE,
  type ServiceScenario,
  serviceScenario,
  stocks,
  waitEvent,
} from './service-harness.js';

// A reconcile that finds someone changed or deleted our records in the portal
// has the shop's export applied again, though its content was already processed.
describe('daemon: drift found by a reconcile is repaired from the last export', () => {
  const fx = daemonFixture();
  const services = fx.services;

  async function start(s: ServiceScenario, cron: CronStarter, log = capture()): Promise<{ service: Service; lines: Line[] }> {
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, cronStarter: cron });
    services.push(service);
    return { service, lines: log.lines };
  }

  it('re-queues the archived export: the edit is overwritten, the deleted record comes back, the archive stays put', async () => {
    const s = await serviceScenario(fx.emu, 'drift-move');
    await s.writeConfig({ shop: s.dataset({ schedules: RECONCILE }) });
    const cron = manualCron();
    const { service, lines } = await start(s, cron.starter);
    await drop(s.inbox, 'stock.csv', exportCsv(4, 3));
    await waitEvent(lines, 'file.processed');
    const archive = await readdir(join(s.inbox, 'processed'));
    expect(archive).toHaveLength(1);

    portalDrift(fx.emu, s.datasetId);
    cron.fire();
    const reapply = await waitEvent(lines, 'reconcile.reapply');
    expect(reapply).toMatchObject({ action: 'requeued', edited: 1, deleted: 1, added: 0, file: join(s.inbox, 'processed', archive[0]!) });
    await waitEvent(lines, 'sync.summary', { result: 'published' }, 2);
    await service.datasets.idle();
    expect(stocks(fx.emu, s.datasetId)).toEqual({ 'P-0001': 3, 'P-0002': 3, 'P-0003': 3, 'P-0004': 3 });
    expect(events(lines, 'file.ready', { origin: 'reapply' })).toHaveLength(1);
    expect(await readdir(join(s.inbox, 'processed'))).toEqual(archive);

    // Applied again, its content is the last processed once more: the same export is skipped as before.
    await drop(s.inbox, 'stock-2.csv', exportCsv(4, 3));
    await waitEvent(lines, 'file.skipped', { reason: 'same_content' });
  });

  it('with on_foreign_edit: keep, the re-applied export brings the deleted record back and keeps the portal edit', async () => {
    const s = await serviceScenario(fx.emu, 'drift-keep');
    await s.writeConfig({ shop: s.dataset({ schedules: RECONCILE, policy: { staging: false, on_foreign_edit: 'keep' } }) });
    const cron = manualCron();
    const { service, lines } = await start(s, cron.starter);
    await drop(s.inbox, 'stock.csv', exportCsv(4, 3));
    await waitEvent(lines, 'file.processed');

    portalDrift(fx.emu, s.datasetId);
    cron.fire();
    // The kept edit is no drift to repair; the deletion is.
    expect(await waitEvent(lines, 'reconcile.reapply')).toMatchObject({ action: 'requeued', edited: 0, deleted: 1 });
    await waitEvent(lines, 'sync.summary', { result: 'published' }, 2);
    await service.datasets.idle();
    expect(stocks(fx.emu, s.datasetId)).toEqual({ 'P-0001': 99, 'P-0002': 3, 'P-0003': 3, 'P-0004': 3 });
  });

  it('not archived (after: delete): the marker is cleared, in the state db, so the next export with the same content is synced, after a restart too', async () => {
    const s = await serviceScenario(fx.emu, 'drift-delete');
    const ds = s.dataset({ schedules: RECONCILE });
    await s.writeConfig({ shop: { ...ds, watch: { ...(ds.watch as object), after: 'delete' } } });
    const cron = manualCron();
    const first = await start(s, cron.starter);
    await drop(s.inbox, 'stock.csv', exportCsv(4, 3));
    await waitEvent(first.lines, 'file.processed');

    portalDrift(fx.emu, s.datasetId);
    cron.fire();
    expect(await waitEvent(first.lines, 'reconcile.reapply')).toMatchObject({ action: 'marker_cleared', reason: 'after_delete', edited: 1, deleted: 1 });
    await first.service.datasets.idle();
    expect(stocks(fx.emu, s.datasetId)).toMatchObject({ 'P-0001': 99 });
    await services.pop()!.stop();

    const second = await start(s, manualCron().starter);
    await drop(s.inbox, 'stock.csv', exportCsv(4, 3));
    await waitEvent(second.lines, 'sync.summary', { result: 'published' });
    await second.service.datasets.idle();
    expect(events(second.lines, 'file.skipped')).toEqual([]);
    expect(stocks(fx.emu, s.datasetId)).toEqual({ 'P-0001': 3, 'P-0002': 3, 'P-0003': 3, 'P-0004': 3 });
  });

  it('the same drift again after the export was applied again (a field the server normalises) is not repaired again: health says so until the drift changes', async () => {
    const s = await serviceScenario(fx.emu, 'drift-loop');
    const port = await freePort();
    await s.writeConfig({ shop: s.dataset({ schedules: RECONCILE }) }, { health: { listen: `127.0.0.1:${port}` } });
    const cron = manualCron();
    const { service, lines } = await start(s, cron.starter);
    await drop(s.inbox, 'stock.csv', exportCsv(4, 3));
    await waitEvent(lines, 'file.processed');
    /** The server turns P-0001's stock into 99 again, as a normalising server does after every write. */
    const normalise = () => {
      const p1 = fx.emu.emulator.records(s.datasetId).find((r) => r.record_id === 'P-0001')!;
      fx.emu.emulator.portalPublish(s.datasetId, { upsert: [{ ...p1, attributes: { ...(p1.attributes as object), stock: 99 } } as DatasetRecord] });
    };

    normalise();
    cron.fire();
    expect(await waitEvent(lines, 'reconcile.reapply')).toMatchObject({ action: 'requeued', edited: 1 });
    await waitEvent(lines, 'sync.summary', { result: 'published' }, 2);
    await service.datasets.idle();

    normalise();
    cron.fire();
    expect(await waitEvent(lines, 'reconcile.reapply', {}, 2)).toMatchObject({ action: 'none', reason: 'repeated', edited: 1 });
    await service.datasets.idle();
    expect(events(lines, 'file.ready', { origin: 'reapply' })).toHaveLength(1);
    expect(events(lines, 'sync.summary')).toHaveLength(2);
    expect(await healthz(port)).toMatchObject({ status: 'degraded', reasons: [{ dataset: 'shop', topic: 'drift', code: 'DRIFT_REPEATED' }] });

    // It stays so through a restart (the marker is in the state db) and a reconcile that finds the server as it left it …
    await services.pop()!.stop();
    const cron2 = manualCron();
    const second = await start(s, cron2.starter);
    expect(await healthz(port)).toMatchObject({ status: 'degraded', reasons: [{ topic: 'drift', code: 'DRIFT_REPEATED' }] });
    cron2.fire();
    await waitEvent(second.lines, 'reconcile.done');
    await second.service.datasets.idle();
    expect(events(second.lines, 'reconcile.reapply')).toEqual([]);
    expect(await healthz(port)).toMatchObject({ status: 'degraded', reasons: [{ topic: 'drift', code: 'DRIFT_REPEATED' }] });

    // … until something changes: a person deletes P-0003, a drift not seen before, and the export is applied again.
    fx.emu.emulator.portalPublish(s.datasetId, { delete: ['P-0003'] });
    cron2.fire();
    expect(await waitEvent(second.lines, 'reconcile.reapply')).toMatchObject({ action: 'requeued', edited: 0, deleted: 1 });
    await waitEvent(second.lines, 'sync.summary', { result: 'published' });
    await second.service.datasets.idle();
    expect(stocks(fx.emu, s.datasetId)).toEqual({ 'P-0001': 3, 'P-0002': 3, 'P-0003': 3, 'P-0004': 3 });
    expect(await healthz(port)).toMatchObject({ status: 'ok', reasons: [] });
  });

  it('leaves a held change alone: the older export is not applied over it', async () => {
    const s = await serviceScenario(fx.emu, 'drift-held');
    await s.writeConfig({ shop: s.dataset({ schedules: RECONCILE }) });
    const cron = manualCron();
    const { service, lines } = await start(s, cron.starter);
    await drop(s.inbox, 'stock.csv', exportCsv(10, 3), Date.now() - 60_000);
    await waitEvent(lines, 'file.processed');
    // 9 of 10 records deleted: the delete-ratio guard holds it for a person.
    await drop(s.inbox, 'stock-2.csv', exportCsv(1, 3));
    await waitEvent(lines, 'sync.summary', { result: 'held' });
    await service.datasets.idle();

    portalDrift(fx.emu, s.datasetId);
    cron.fire();
    expect(await waitEvent(lines, 'reconcile.reapply')).toMatchObject({ action: 'none', reason: 'change_held', held: 'guard' });
    await service.datasets.idle();
    expect(events(lines, 'file.ready', { origin: 'reapply' })).toEqual([]);
    expect(events(lines, 'sync.summary')).toHaveLength(2);
  });
});
