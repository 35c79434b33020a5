import { afterEach, describe, expect, it } from 'vitest';
import { DaemonMetrics } from '../../src/daemon/metrics.js';
import { feedView } from '../../src/feeds/view.js';
import { recs, type Scenario } from '../sync/harness.js';
import { feedScenario, writeStockFile } from './helpers.js';

/** Issue 13: the summary, /metrics and status per feed. */

let sc: Scenario | undefined;
afterEach(async () => {
  await sc?.close();
  sc = undefined;
});

describe('per feed: summary, metrics, status', () => {
  it('rows read, matched, unmatched and fields changed in the summary and in /metrics labelled by dataset and feed; status shows each feed\'s last file and time', async () => {
    const f = await feedScenario(recs(10));
    sc = f.sc;
    const file = await writeStockFile(sc, { 'r-001': 3, 'r-002': 4, 'r-003': 0, 'x-1': 1 }, 'stock-1.csv');
    const sum = await sc.engine.sync(feedView(f.ds, 'stock'), { file });
    expect(sum).toMatchObject({ result: 'published', rows: 4 });
    expect(sum.feed).toMatchObject({ name: 'stock', matched: 3, unmatched: 1, fieldsChanged: 3 });
    const summaryLine = sc.logs.filter((l) => l.event === 'sync.summary').at(-1)!;
    expect(summaryLine.feed).toMatchObject({ name: 'stock', matched: 3, unmatched: 1, firstUnmatched: ['x-1'] });

    const m = new DaemonMetrics();
    m.recordSync(sum, Date.now());
    const text = await m.registry.metrics();
    expect(text).toContain('dataset_connector_feed_syncs_total{dataset="shop-1",feed="stock",outcome="published"} 1');
    expect(text).toContain('dataset_connector_feed_rows_total{dataset="shop-1",feed="stock",kind="read"} 4');
    expect(text).toContain('dataset_connector_feed_rows_total{dataset="shop-1",feed="stock",kind="matched"} 3');
    expect(text).toContain('dataset_connector_feed_rows_total{dataset="shop-1",feed="stock",kind="unmatched"} 1');
    expect(text).toContain('dataset_connector_feed_fields_changed_total{dataset="shop-1",feed="stock"} 3');

    const status = sc.engine.status(f.ds);
    expect(status.feeds.map((x) => [x.feed, x.file])).toEqual([
      ['main', `${sc.dir}/catalogue-0.csv`],
      ['stock', file],
    ]);
    expect(status.feeds[1]!.publishedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
  });
});
