import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { Service } from '../../src/daemon/service.js';
import { startA2aEmulator, type RunningA2aEmulator } from '../../src/emulator/a2a/server.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/server.js';
import { capture, drop, exportCsv, until } from './service-harness.js';

const A2A_KEY = 'tba_live_DAEMONALERTCANARY_5f1e';
const ALERT_TO = '+81355550100';

/** connector.yaml of one dataset watching `inbox`, with call alerts when `alerts` is given. */
function configYaml(o: { dir: string; inbox: string; apiUrl: string; datasetId: string; alerts?: Record<string, unknown> }): string {
  return stringify({
    state_dir: join(o.dir, 'state'),
    timezone: 'UTC',
    ...(o.alerts ? { alerts: { call: o.alerts } } : {}),
    datasets: {
      shop: {
        api: { base_url: o.apiUrl, dataset_id: o.datasetId, key: { env: 'DATASET_KEY' } },
        source: { type: 'csv' },
        mapping: { fields: { record_id: 'sku', display_name: 'name', api_value: 'code', 'attributes.stock': { column: 'stock', transforms: [{ integer: {} }] } } },
        policy: { staging: false },
        watch: { path: o.inbox, include: ['*.csv'], settle_ms: 100, poll_interval_ms: 50 },
      },
    },
  });
}

describe('daemon call alerts end to end (dataset emulator + A2A emulator)', () => {
  let api: RunningEmulator;
  let a2a: RunningA2aEmulator;
  let root: string;

  beforeAll(async () => {
    api = await startEmulator({ port: 0 });
    a2a = await startA2aEmulator({
      port: 0,
      keys: { [A2A_KEY]: 'shop-account' },
      scripts: { [ALERT_TO]: { connectAfterMs: 5, steps: [{ say: 'Hello?', afterMs: 5 }, { end: 'completed', say: 'Understood.', afterMs: 5 }] } },
    });
    root = await mkdtemp(join(tmpdir(), 'dc-alerts-e2e-'));
  });
  afterAll(async () => {
    await a2a?.close();
    await api?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('a guard holds a mass delete: exactly one alert call, naming the approve command, and none again within the day', async () => {
    api.emulator.addDataset({ id: 'alert-shop' });
    const datasetKey = api.emulator.addKey({ dataset: 'alert-shop' });
    const dir = join(root, 'held');
    const inbox = join(dir, 'inbox');
    await mkdir(inbox, { recursive: true });
    const configPath = join(dir, 'connector.yaml');
    const alerts = { to: ALERT_TO, key: { env: 'A2A_KEY' }, base_url: a2a.url, allowed_hours: '00:00-24:00', held_after_minutes: 0 };
    await writeFile(configPath, configYaml({ dir, inbox, apiUrl: api.url, datasetId: 'alert-shop', alerts }));
    const log = capture();
    const service = await Service.start({
      configPath,
      logger: log.logger,
      env: { DATASET_KEY: datasetKey, A2A_KEY },
      alertCheckIntervalMs: 50,
    });
    try {
      expect(log.lines.find((l) => l.event === 'daemon.started')).toMatchObject({ call_alerts: true });
      const summaries = () => log.lines.filter((l) => l.event === 'sync.summary');

      await drop(inbox, 'stock-1.csv', exportCsv(20));
      await until(() => summaries()[0], 'the first sync', log.lines);
      expect(summaries()[0]).toMatchObject({ result: 'published', adds: 20 });
      // Nothing is held: the checks that ran meanwhile placed no call.
      expect(a2a.emulator.credits).toBe(0);

      // 18 of 20 records gone: the delete guard holds the change for a person.
      await drop(inbox, 'stock-2.csv', exportCsv(2));
      await until(() => summaries()[1], 'the second sync', log.lines);
      expect(summaries()[1]).toMatchObject({ result: 'held' });
      const ended = await until(
        () => log.lines.find((l) => l.event === 'alert.call' && l.outcome === 'completed'),
        'the alert call to end',
        log.lines,
      );
      expect(ended).toMatchObject({ dataset: 'shop', kind: 'held' });

      // More checks while the change stays held: still the one call (max one per dataset per day).
      expect(await service.checkAlerts()).toEqual([]);
      expect(await service.checkAlerts()).toEqual([]);
      expect(a2a.emulator.credits).toBe(1);
      const call = a2a.emulator.calls[0]!;
      expect(call.to).toBe(ALERT_TO);
      expect(call.goal).toContain('dataset-connector approve shop');
      expect(ended.task_id).toBe(call.taskId);
      // The alert informs only: the records are as published before the hold.
      expect(api.emulator.records('alert-shop')).toHaveLength(20);
    } finally {
      await service.stop();
    }
    expect(a2a.emulator.credits).toBe(1);
    expect(log.raw()).not.toContain('DAEMONALERTCANARY');
  });
  it('SIGHUP reload turns call alerts on for a change already held; a reload without them turns them off', async () => {
    api.emulator.addDataset({ id: 'alert-reload' });
    const datasetKey = api.emulator.addKey({ dataset: 'alert-reload' });
    const dir = join(root, 'reload');
    const inbox = join(dir, 'inbox');
    await mkdir(inbox, { recursive: true });
    const configPath = join(dir, 'connector.yaml');
    const base = { dir, inbox, apiUrl: api.url, datasetId: 'alert-reload' };
    await writeFile(configPath, configYaml(base));
    const log = capture();
    const service = await Service.start({ configPath, logger: log.logger, env: { DATASET_KEY: datasetKey, A2A_KEY } });
    const before = a2a.emulator.credits;
    try {
      expect(log.lines.find((l) => l.event === 'daemon.started')).toMatchObject({ call_alerts: false });
      const summaries = () => log.lines.filter((l) => l.event === 'sync.summary');
      await drop(inbox, 'a.csv', exportCsv(10));
      await until(() => summaries()[0], 'the first sync', log.lines);
      await drop(inbox, 'b.csv', exportCsv(1));
      await until(() => summaries()[1], 'the held sync', log.lines);
      expect(summaries()[1]).toMatchObject({ result: 'held' });
      expect(await service.checkAlerts()).toEqual([]);

      const alerts = { to: ALERT_TO, key: { env: 'A2A_KEY' }, base_url: a2a.url, allowed_hours: '00:00-24:00', held_after_minutes: 0 };
      await writeFile(configPath, configYaml({ ...base, alerts }));
      expect(await service.reload()).toBe(true);
      expect(log.lines.find((l) => l.event === 'config.reloaded' && l.setting === 'alerts')).toMatchObject({ call_alerts: true });
      const placed = await service.checkAlerts();
      expect(placed).toEqual([expect.objectContaining({ dataset: 'shop', kind: 'held', taskId: expect.any(String) })]);
      expect(a2a.emulator.credits).toBe(before + 1);

      await writeFile(configPath, configYaml(base));
      expect(await service.reload()).toBe(true);
      expect(log.lines.filter((l) => l.event === 'config.reloaded' && l.setting === 'alerts').at(-1)).toMatchObject({ call_alerts: false });
      expect(await service.checkAlerts()).toEqual([]);
    } finally {
      await service.stop();
    }
    expect(a2a.emulator.credits).toBe(before + 1);
  });
});
