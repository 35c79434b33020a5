import { createRequire } from 'node:module';
import type * as Prom from 'prom-client';
import { connectorVersion } from '../version.js';
import type { SyncSummary } from '../sync/outcome.js';

// prom-client's own modules, not its index: the index also loads the default-metrics collectors, the cluster
// aggregator and the push gateway (cluster, http, https, zlib, perf_hooks), about 11 MB of an idle daemon's RSS
// for nothing /metrics shows (issue 18). The package has no "exports" map, so these paths are its public files.
const require = createRequire(import.meta.url);
const Registry = require('prom-client/lib/registry') as typeof Prom.Registry;
const Counter = require('prom-client/lib/counter') as typeof Prom.Counter;
const Gauge = require('prom-client/lib/gauge') as typeof Prom.Gauge;
const Histogram = require('prom-client/lib/histogram') as typeof Prom.Histogram;
type Counter<L extends string> = Prom.Counter<L>;
type Gauge<L extends string> = Prom.Gauge<L>;

/** The daemon's Prometheus metrics, in a registry of their own (no process-global state). */
export class DaemonMetrics {
  readonly registry = new Registry();
  readonly syncs = this.#counter(
    'dataset_connector_syncs_total',
    'Syncs by outcome (published, unchanged, held, staged, waiting, rejected, failed, stopped, skipped).',
    ['dataset', 'outcome'],
  );
  readonly records = this.#counter(
    'dataset_connector_records_total',
    'Records changed on the server by confirmed syncs, by operation (add, change, delete).',
    ['dataset', 'operation'],
  );
  readonly requests = this.#counter('dataset_connector_requests_total', 'API requests by HTTP status ("network" when no answer came).', ['dataset', 'status']);
  readonly retries = this.#counter('dataset_connector_retries_total', 'API requests that repeated an earlier attempt.', ['dataset']);
  readonly guardHolds = this.#counter('dataset_connector_guard_holds_total', 'Changes held by a guard for a person to approve or discard.', ['dataset']);
  readonly feedSyncs = this.#counter('dataset_connector_feed_syncs_total', 'Syncs of a feed\'s file (issue 13) by outcome.', ['dataset', 'feed', 'outcome']);
  readonly feedRows = this.#counter(
    'dataset_connector_feed_rows_total',
    'Rows of feeds\' files (issue 13) by kind: read, matched (a record it may change), unmatched (no such record).',
    ['dataset', 'feed', 'kind'],
  );
  readonly feedFieldsChanged = this.#counter('dataset_connector_feed_fields_changed_total', 'Field values (record × field) changed by feeds\' published files (issue 13).', ['dataset', 'feed']);
  readonly queueDepth = this.#gauge('dataset_connector_queue_depth', 'Jobs waiting or running per dataset.', ['dataset']);
  /** Read from the state database at each scrape (heldFrom): an approve or discard from the CLI, another process, shows at once. */
  readonly held = new Gauge({
    name: 'dataset_connector_held',
    help: 'Whether a change waits for a person now (1) or not (0), per dataset, as the state database says at each scrape: 0 once it is approved or discarded, also from the CLI. The syncs_total outcome "held" counts the syncs that held one.',
    labelNames: ['dataset'] as const,
    registers: [this.registry],
    collect: () => this.#collectHeld(),
  });
  #heldOf: (() => ReadonlyArray<{ dataset: string; held: boolean }>) | null = null;
  readonly lastSuccess = this.#gauge(
    'dataset_connector_last_success_timestamp_seconds',
    'When the dataset last ended a sync published or unchanged (Unix time).',
    ['dataset'],
  );

  readonly syncDuration = new Histogram({
    name: 'dataset_connector_sync_duration_seconds',
    help: 'How long syncs took, from reading the export to the outcome, by outcome.',
    labelNames: ['dataset', 'outcome'] as const,
    // From a few requests (under a second) to a large replace job (up to an hour).
    buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900, 1800, 3600],
    registers: [this.registry],
  });
  readonly buildInfo = this.#gauge('dataset_connector_build_info', 'Always 1; the labels say which build runs.', ['version', 'node']);

  constructor() {
    this.buildInfo.set({ version: connectorVersion(), node: process.versions.node }, 1);
  }

  /** Count one finished sync from its summary line. */
  recordSync(s: SyncSummary, nowMs: number): void {
    this.syncs.inc({ dataset: s.dataset, outcome: s.result });
    this.syncDuration.observe({ dataset: s.dataset, outcome: s.result }, s.durationMs / 1000);
    if (s.result === 'published') {
      for (const [operation, n] of [['add', s.adds], ['change', s.changes], ['delete', s.deletes]] as const) {
        if (n > 0) this.records.inc({ dataset: s.dataset, operation }, n);
      }
    }
    if (s.guards.held) this.guardHolds.inc({ dataset: s.dataset });
    // A coalesced plan: every feed of it with its own labels and rows; otherwise the one feed with the sync's rows.
    for (const f of s.feeds ?? (s.feed ? [{ ...s.feed, rows: s.rows }] : [])) this.#recordFeed(s, f);
    if (s.result === 'published' || s.result === 'unchanged') this.lastSuccess.set({ dataset: s.dataset }, nowMs / 1000);
  }

  #recordFeed(s: SyncSummary, f: NonNullable<SyncSummary['feed']> & { rows: number }): void {
    const labels = { dataset: s.dataset, feed: f.name };
    this.feedSyncs.inc({ ...labels, outcome: s.result });
    this.feedRows.inc({ ...labels, kind: 'read' }, f.rows);
    if (f.matched) this.feedRows.inc({ ...labels, kind: 'matched' }, f.matched);
    if (f.unmatched) this.feedRows.inc({ ...labels, kind: 'unmatched' }, f.unmatched);
    if (s.result === 'published' && f.fieldsChanged) this.feedFieldsChanged.inc(labels, f.fieldsChanged);
  }

  /** Count one API request attempt (the client's onRequest hook). */
  recordRequest(dataset: string, status: number | null, attempt: number): void {
    this.requests.inc({ dataset, status: status === null ? 'network' : String(status) });
    if (attempt > 1) this.retries.inc({ dataset });
  }

  /** The last success the state db remembers (a restart keeps the metric); later syncs set it as they end. */
  restoreLastSuccess(dataset: string, atMs: number | null): void {
    if (atMs !== null) this.lastSuccess.set({ dataset }, atMs / 1000);
  }

  /** Where the held gauge reads, at each scrape, whether each dataset served has a change waiting for a person. */
  heldFrom(read: () => ReadonlyArray<{ dataset: string; held: boolean }>): void {
    this.#heldOf = read;
  }

  #collectHeld(): void {
    if (!this.#heldOf) return;
    this.held.reset();
    try {
      for (const { dataset, held } of this.#heldOf()) this.held.set({ dataset }, held ? 1 : 0);
    } catch {
      // The state db closed while stopping: nothing to say of held changes then.
    }
  }

  /** Drop the gauges of a dataset removed by a reload (counters stay, as Prometheus expects). */
  forget(dataset: string): void {
    this.queueDepth.remove({ dataset });
    this.lastSuccess.remove({ dataset });
  }

  #counter<L extends string>(name: string, help: string, labelNames: readonly L[]): Counter<L> {
    return new Counter({ name, help, labelNames, registers: [this.registry] });
  }

  #gauge<L extends string>(name: string, help: string, labelNames: readonly L[]): Gauge<L> {
    return new Gauge({ name, help, labelNames, registers: [this.registry] });
  }
}
