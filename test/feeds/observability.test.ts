import { afterEach, describe, expect, it } from 'vitest';
import { configSchema, type DatasetConfig } from '../../src/config/schema.js';
import { normaliseConfig } from '../../src/config/normalise.js';
import { DaemonMetrics } from '../../src/daemon/metrics.js';
import { feedView } from '../../src/feeds/view.js';
import { recs, scenario, type Scenario } from '../sync/harness.js';
import { CATALOGUE, feedScenario, stockOf, writeStockFile } from './helpers.js';

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

describe('fields changed, for every role (review of #13)', () => {
  it('a full feed\'s file: the field values its plan changes, in the summary and in /metrics', async () => {
    const f = await feedScenario(recs(10));
    sc = f.sc;
    const stock = await writeStockFile(sc, { 'r-001': 3, 'r-002': 4 }, 'stock-1.csv');
    expect(await sc.engine.sync(feedView(f.ds, 'stock'), { file: stock })).toMatchObject({ result: 'published', feed: { fieldsChanged: 2 } });
    // Two names and one code changed, one record added and one left out: 3 field values of records that were there.
    const next = recs(10).slice(1).map((r) => (r.record_id === 'r-002' || r.record_id === 'r-003' ? { ...r, display_name: `${r.display_name} new` } : r.record_id === 'r-004' ? { ...r, api_value: 'other' } : r));
    const sum = await sc.engine.sync(f.ds, { file: await sc.writeExport([...next, ...recs(1, 11)], 'catalogue-1.csv') });
    expect(sum).toMatchObject({ result: 'published', adds: 1, changes: 3, deletes: 1, feed: { name: 'main', role: 'full', fieldsChanged: 3 } });
    const m = new DaemonMetrics();
    m.recordSync(sum, Date.now());
    expect(await m.registry.metrics()).toContain('dataset_connector_feed_fields_changed_total{dataset="shop-1",feed="main"} 3');
    // The stock the stock feed set is kept (no field of it changed), and the same file again changes nothing.
    expect(stockOf(sc)).toMatchObject({ 'r-002': 4 });
    const again = await sc.engine.sync(f.ds, { file: await sc.writeExport([...next, ...recs(1, 11)], 'catalogue-2.csv') });
    expect(again).toMatchObject({ result: 'unchanged', feed: { fieldsChanged: 0 } });
  });
});

describe('status: each feed\'s last file, whatever the form of the dataset (review of #13, D7a)', () => {
  /** The scenario's dataset as loadConfig gives it from `written` (the single-source form, or feeds with exports). */
  function dataset(s: Scenario, written: Record<string, unknown>, exports: Record<string, unknown> = {}): DatasetConfig {
    const api = { base_url: s.ds.api.base_url, key: { env: 'UNUSED' } };
    const config = configSchema.parse(normaliseConfig({ exports, datasets: { 'shop-1': { api, policy: s.ds.policy, ...written } } }));
    const ds = config.datasets['shop-1']!;
    return { ...ds, name: s.ds.name, file: s.ds.file, api: s.ds.api };
  }

  it.each([
    ['the feeds form, one full feed taking a shared export (from:)', { feeds: { store: { role: 'full', from: 'ho', mapping: CATALOGUE.mapping } } }, { ho: { watch: { path: '/srv/ho' }, source: { type: 'csv' } } }, 'store'],
    ['the feeds form, one full feed of its own', { feeds: { catalogue: { role: 'full', ...CATALOGUE } } }, {}, 'catalogue'],
    ['the single-source form (one full feed, main)', { ...CATALOGUE }, {}, 'main'],
  ] as const)('%s: its last file and time, after a publish and after a file that changed nothing', async (_, written, exports, feed) => {
    sc = await scenario({ manualClock: true });
    const ds = feedView(dataset(sc, written, exports), feed);
    const first = await sc.writeExport(recs(3), 'catalogue-1.csv');
    expect(await sc.engine.sync(ds, { file: first })).toMatchObject({ result: 'published' });
    const after = sc.engine.status(ds);
    expect(after.feeds).toEqual([{ feed, file: first, sha256: expect.stringMatching(/^[0-9a-f]{64}$/), fileTime: expect.stringMatching(/^\d{4}-/), publishedAt: expect.stringMatching(/^\d{4}-/) }]);
    // The same records again: nothing to publish, and the feed's last file is this one.
    const second = await sc.writeExport(recs(3), 'catalogue-2.csv');
    expect(await sc.engine.sync(ds, { file: second })).toMatchObject({ result: 'unchanged' });
    expect(sc.engine.status(ds).feeds.map((f) => [f.feed, f.file])).toEqual([[feed, second]]);
    // Nothing of the records is kept as feed state for a dataset of one feed (no other feed to merge with).
    expect(sc.db.conn.prepare('SELECT COUNT(*) AS n FROM feed_values').get()).toEqual({ n: 0 });
  });

  // Review of #13 (rv13b, D3): a dataset whose only feed is a full feed (here taking a shared export with from:) had
  // no `feed` in its summary and no dataset_connector_feed_* series, while its sister stores' update feeds had them.
  it.each([
    ['the feeds form, one full feed taking a shared export', { feeds: { store: { role: 'full', from: 'ho', mapping: CATALOGUE.mapping } } }, { ho: { watch: { path: '/srv/ho' }, source: { type: 'csv' } } }, 'store'],
    // The single-source form is one full feed named main (README), as status lists it: its figures are main's.
    ['the single-source form', { ...CATALOGUE }, {}, 'main'],
  ] as const)('%s: the summary and /metrics carry the feed\'s figures', async (_, written, exports, feed) => {
    sc = await scenario({ manualClock: true });
    const ds = feedView(dataset(sc, written, exports), feed);
    expect(await sc.engine.sync(ds, { file: await sc.writeExport(recs(3), 'catalogue-1.csv') })).toMatchObject({ result: 'published' });
    const renamed = recs(3).map((r) => (r.record_id === 'r-002' ? { ...r, display_name: 'Renamed' } : r));
    const sum = await sc.engine.sync(ds, { file: await sc.writeExport(renamed, 'catalogue-2.csv') });
    expect(sum).toMatchObject({ result: 'published', changes: 1 });
    expect(sum.feed).toMatchObject({ name: feed, role: 'full', matched: 3, unmatched: 0, fieldsChanged: 1 });
    const m = new DaemonMetrics();
    m.recordSync(sum, Date.now());
    expect(await m.registry.metrics()).toContain(`dataset_connector_feed_syncs_total{dataset="shop-1",feed="${feed}",outcome="published"} 1`);
  });
});
