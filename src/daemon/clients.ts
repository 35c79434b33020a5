import type { Logger } from 'pino';
import { DatasetClient } from '../api/client.js';
import type { SharedRateWindow } from '../api/rate-limiter.js';
import type { Clock } from '../clock.js';
import { clientOptionsFor } from '../config/client-options.js';
import type { DatasetConfig } from '../config/schema.js';
import { canonicalJson, sha256 } from '../model/canonical.js';
import type { Secret } from '../secret.js';
import type { DaemonMetrics } from './metrics.js';

/**
 * One API client per dataset, kept across syncs (one keep-alive pool and the
 * shared limiter) and replaced when a reload changes its api settings or key.
 */
export class ClientPool {
  readonly #clients = new Map<string, { id: string; client: DatasetClient }>();
  #keys = new Map<string, Secret>();
  readonly #retired: DatasetClient[] = [];

  constructor(
    private readonly metrics: DaemonMetrics,
    private readonly logger: Logger,
    private readonly clock?: Clock,
    /** The state db's request window, shared with the CLI commands of this machine (A24). */
    private readonly rateWindow?: SharedRateWindow,
  ) {}

  /**
   * Take the keys of a (re)loaded configuration; datasets in `keep` hold on to
   * their current key. Returns the datasets that had a key and now have another.
   */
  setKeys(keys: Map<string, Secret>, keep: readonly string[] = []): string[] {
    const next = new Map(keys);
    for (const name of keep) {
      const old = this.#keys.get(name);
      if (old) next.set(name, old);
    }
    const changed = [...next].filter(([name, key]) => {
      const old = this.#keys.get(name);
      return old !== undefined && old.reveal() !== key.reveal();
    });
    this.#keys = next;
    return changed.map(([name]) => name);
  }

  /** The client of a dataset (the engine's clientFor). */
  clientFor(ds: DatasetConfig): DatasetClient {
    const key = this.#keys.get(ds.name);
    if (!key) throw new TypeError(`no key resolved for dataset ${ds.name}`);
    // A rotated key (same settings, new value) gives a new client; only a hash is kept.
    const id = canonicalJson({ api: ds.api, key: sha256(key.reveal()) });
    const cur = this.#clients.get(ds.name);
    if (cur?.id === id) return cur.client;
    if (cur) this.#retired.push(cur.client);
    const client = new DatasetClient(
      clientOptionsFor(ds, key, {
        logger: this.logger.child({ dataset: ds.name }),
        ...(this.clock ? { clock: this.clock } : {}),
        ...(this.rateWindow ? { rateWindow: this.rateWindow } : {}),
        onRequest: (e) => this.metrics.recordRequest(ds.name, e.status, e.attempt),
      }),
    );
    this.#clients.set(ds.name, { id, client });
    return client;
  }

  /** Close every client (after the datasets stopped). */
  async close(): Promise<void> {
    const all = [...this.#clients.values()].map((c) => c.client).concat(this.#retired.splice(0));
    this.#clients.clear();
    await Promise.all(all.map((c) => c.close().catch(() => undefined)));
  }
}
