import { afterEach, describe, expect, it } from 'vitest';
import { parseListen, startHealthServer, type HealthServer } from '../../src/daemon/health-server.js';
import { HealthState } from '../../src/daemon/health-state.js';
import { syncHeldHealth } from '../../src/daemon/held-health.js';
import type { HeldDraft } from '../../src/snapshot/types.js';
import { DaemonMetrics } from '../../src/daemon/metrics.js';
import { emptySummary } from '../../src/sync/outcome.js';

let server: HealthServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('health state', () => {
  it('is ok when running without reasons, degraded with them, and keeps the first time of a reason', () => {
    const h = new HealthState();
    expect(h.report().status).toBe('starting');
    h.setPhase('running');
    h.addDataset('shop');
    expect(h.report()).toEqual({ status: 'ok', datasets: ['shop'], reasons: [] });
    h.set('shop', 'sync', 'UNAUTHORIZED', 'key revoked', 100);
    h.set('shop', 'sync', 'UNAUTHORIZED', 'key revoked', 200);
    expect(h.report()).toMatchObject({ status: 'degraded', reasons: [{ dataset: 'shop', code: 'UNAUTHORIZED', since: 100 }] });
    h.clear('shop', 'sync');
    expect(h.report().status).toBe('ok');
    h.set('shop', 'draft', 'DRAFT_EXPIRING', 'soon', 1);
    h.removeDataset('shop');
    expect(h.report()).toEqual({ status: 'ok', datasets: [], reasons: [] });
  });
});

describe('held changes in /healthz, from the state db', () => {
  const held = (over: Partial<HeldDraft>): HeldDraft => ({ kind: 'guard', version: 4, reason: 'max_delete_ratio: 30%', planId: 'p', summary: null, since: 50, ...over });

  it('each report reads what is held: a hold shows with its code, and once it is gone its held and draft reasons go', () => {
    const h = new HealthState();
    h.setPhase('running');
    const db = new Map<string, HeldDraft | null>([
      ['a', held({})],
      ['b', held({ kind: 'foreign_draft', summary: { mixed: true } })],
      ['c', held({ kind: 'publish_required' })],
    ]);
    h.refreshWith(() => syncHeldHealth(h, [...db.keys()], (d) => db.get(d) ?? null));
    h.set('a', 'draft', 'DRAFT_EXPIRING', 'draft v4 expires in 30 min', 60);
    expect(h.report().reasons.map((r) => [r.dataset, r.topic, r.code, r.since])).toEqual([
      ['a', 'draft', 'DRAFT_EXPIRING', 60],
      ['a', 'held', 'HELD_GUARD', 50],
      ['b', 'held', 'DRAFT_MIXED', 50],
      ['c', 'held', 'HELD_PUBLISH_REQUIRED', 50],
    ]);
    // Another process (approve, discard) cleared a and c in the state db: the next report knows.
    db.set('a', null);
    db.set('c', null);
    expect(h.report()).toMatchObject({ status: 'degraded', reasons: [{ dataset: 'b', topic: 'held' }] });
    db.set('b', null);
    expect(h.report()).toMatchObject({ status: 'ok', reasons: [] });
  });

  it('a check that fails (the db closed while stopping) leaves the report as it was', () => {
    const h = new HealthState();
    h.setPhase('running');
    h.set('a', 'held', 'HELD_GUARD', 'x', 1);
    h.refreshWith(() => {
      throw new TypeError('The database connection is not open');
    });
    expect(h.report()).toMatchObject({ status: 'degraded', reasons: [{ code: 'HELD_GUARD' }] });
  });
});

describe('health listener', () => {
  it('parses host:port, IPv6 too', () => {
    expect(parseListen('127.0.0.1:9464')).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(parseListen('[::1]:0')).toEqual({ host: '::1', port: 0 });
  });

  it('serves /healthz (200 ok, 503 degraded) and /metrics in Prometheus text', async () => {
    const health = new HealthState();
    const metrics = new DaemonMetrics();
    health.setPhase('running');
    server = await startHealthServer('127.0.0.1:0', health, metrics);
    const base = `http://127.0.0.1:${server.address.port}`;

    let res = await fetch(`${base}/healthz`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'ok' });

    health.set('shop', 'sync', 'GUARD_HELD', 'approve or discard', 1);
    res = await fetch(`${base}/healthz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ status: 'degraded', reasons: [{ code: 'GUARD_HELD' }] });

    metrics.recordSync({ ...emptySummary('shop', 'a.csv'), result: 'published', adds: 3, deletes: 1, requests: 4 }, 1_700_000_000_000);
    metrics.recordSync({ ...emptySummary('shop', 'b.csv'), result: 'held', guards: { held: true, reasons: ['max_deletes'] } }, 0);
    metrics.recordRequest('shop', 201, 1);
    metrics.recordRequest('shop', null, 2);
    metrics.queueDepth.set({ dataset: 'shop' }, 2);
    res = await fetch(`${base}/metrics`);
    const text = await res.text();
    expect(res.headers.get('content-type')).toContain('text/plain');
    for (const line of [
      'dataset_connector_syncs_total{dataset="shop",outcome="published"} 1',
      'dataset_connector_syncs_total{dataset="shop",outcome="held"} 1',
      'dataset_connector_records_total{dataset="shop",operation="add"} 3',
      'dataset_connector_records_total{dataset="shop",operation="delete"} 1',
      'dataset_connector_requests_total{dataset="shop",status="201"} 1',
      'dataset_connector_requests_total{dataset="shop",status="network"} 1',
      'dataset_connector_retries_total{dataset="shop"} 1',
      'dataset_connector_guard_holds_total{dataset="shop"} 1',
      'dataset_connector_queue_depth{dataset="shop"} 2',
      'dataset_connector_last_success_timestamp_seconds{dataset="shop"} 1700000000',
    ]) {
      expect(text).toContain(line);
    }
    expect((await fetch(`${base}/nope`)).status).toBe(404);
  });
});
