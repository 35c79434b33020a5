import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { startHealthServer, type HealthServer } from '../../src/daemon/health-server.js';
import { HealthState } from '../../src/daemon/health-state.js';
import { DaemonMetrics } from '../../src/daemon/metrics.js';
import { Service } from '../../src/daemon/service.js';
import { createLogger, zonedTimestamp } from '../../src/log/logger.js';
import { emptySummary } from '../../src/sync/outcome.js';
import { connectorVersion } from '../../src/version.js';
import { capture, daemonFixture, drop, exportCsv, freePort, ManualClock, serviceScenario, waitEvent } from './service-harness.js';

let server: HealthServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

// Issue 17 (logs and metrics).
describe('/readyz beside /healthz', () => {
  it('ready once every configured dataset started and none stopped; a held change degrades /healthz only', async () => {
    const health = new HealthState();
    server = await startHealthServer('127.0.0.1:0', health, new DaemonMetrics());
    const get = async (path: string) => {
      const res = await fetch(`http://127.0.0.1:${server!.address.port}${path}`);
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    health.expect(['a', 'b']);
    health.addDataset('a');
    expect(await get('/readyz')).toMatchObject({ status: 503, body: { ready: false, status: 'starting' } });
    health.setPhase('running');
    health.set('b', 'key', 'KEY_NOT_FOUND', 'no dataset key found', 1);
    expect(await get('/readyz')).toEqual({ status: 503, body: { ready: false, status: 'degraded', notReady: [{ dataset: 'b', code: 'KEY_NOT_FOUND', message: 'no dataset key found' }] } });
    health.clear('b', 'key');
    health.addDataset('b');
    expect(await get('/readyz')).toEqual({ status: 200, body: { ready: true, status: 'ok', notReady: [] } });
    // Held for a person: not healthy, still ready (the daemon serves it).
    health.set('a', 'sync', 'GUARD_HELD', 'approve or discard', 2);
    expect((await get('/healthz')).status).toBe(503);
    expect((await get('/readyz')).status).toBe(200);
    // Stopped by its key: not ready.
    health.set('a', 'sync', 'UNAUTHORIZED', 'key revoked', 3);
    expect(await get('/readyz')).toMatchObject({ status: 503, body: { notReady: [{ dataset: 'a', code: 'UNAUTHORIZED' }] } });
  });
});

describe('metrics: build info and sync duration', () => {
  it('dataset_connector_build_info carries version and node; syncs land in the duration histogram by outcome', async () => {
    const metrics = new DaemonMetrics();
    metrics.recordSync({ ...emptySummary('shop', 'a.csv'), result: 'published', durationMs: 2_000 }, 0);
    metrics.recordSync({ ...emptySummary('shop', 'b.csv'), result: 'rejected', durationMs: 50 }, 0);
    const text = await metrics.registry.metrics();
    expect(text).toContain(`dataset_connector_build_info{version="${connectorVersion()}",node="${process.versions.node}"} 1`);
    expect(text).toContain('dataset_connector_sync_duration_seconds_bucket{le="1",dataset="shop",outcome="published"} 0');
    expect(text).toContain('dataset_connector_sync_duration_seconds_bucket{le="2.5",dataset="shop",outcome="published"} 1');
    expect(text).toContain('dataset_connector_sync_duration_seconds_sum{dataset="shop",outcome="published"} 2');
    expect(text).toContain('dataset_connector_sync_duration_seconds_count{dataset="shop",outcome="rejected"} 1');
    expect(connectorVersion()).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('pretty log timestamps', () => {
  it('are in the configured time zone, with its offset', async () => {
    expect(zonedTimestamp(Date.UTC(2024, 3, 12, 3, 15, 0, 7), 'Asia/Tokyo')).toBe('2024-04-12 12:15:00.007 +09:00');
    expect(zonedTimestamp(Date.UTC(2024, 3, 12, 3, 15, 0, 7), 'UTC')).toBe('2024-04-12 03:15:00.007 +00:00');
    let text = '';
    const destination = new Writable({
      write(chunk, _enc, done) {
        text += String(chunk);
        done();
      },
    });
    const log = createLogger({ format: 'pretty', timezone: 'Asia/Tokyo', destination, colorize: false });
    log.info('hello');
    await new Promise((r) => setImmediate(r));
    expect(text).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} \+09:00\] INFO: hello/);
  });
});

describe('daemon: version and last success across a restart', () => {
  const fx = daemonFixture();

  it('daemon.started carries the version; the last-success metric is restored from the state db at the next start', async () => {
    const s = await serviceScenario(fx.emu, 'obs-restart');
    const port = await freePort();
    await s.writeConfig({ shop: s.dataset() }, { health: { listen: `127.0.0.1:${port}` } });
    const metricLine = async () =>
      (await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()).split('\n').find((l) => l.startsWith('dataset_connector_last_success_timestamp_seconds{'));

    const log = capture();
    let service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: new ManualClock() });
    let first: string | undefined;
    try {
      expect(await waitEvent(log.lines, 'daemon.started')).toMatchObject({ version: connectorVersion(), node: process.versions.node });
      expect(await metricLine()).toBeUndefined();
      await drop(s.inbox, 'stock.csv', exportCsv(3));
      await waitEvent(log.lines, 'sync.summary', { result: 'published' });
      first = await metricLine();
      expect(first).toMatch(/^dataset_connector_last_success_timestamp_seconds\{dataset="shop"\} \d+/);
    } finally {
      await service.stop();
    }
    const again = capture();
    service = await Service.start({ configPath: s.configPath, logger: again.logger, env: s.env, clock: new ManualClock() });
    try {
      await waitEvent(again.lines, 'daemon.started');
      // Seconds from the db's milliseconds: the same second as the metric the sync set.
      expect(Math.floor(Number((await metricLine())!.split(' ')[1]))).toBe(Math.floor(Number(first!.split(' ')[1])));
    } finally {
      await service.stop();
    }
  });
});
