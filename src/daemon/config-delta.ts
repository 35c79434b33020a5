import type { Logger } from 'pino';
import type { Config, DatasetConfig } from '../config/schema.js';
import { canonicalJson } from '../model/canonical.js';
import { event } from '../log/events.js';
import { DatasetRuntime, type RuntimeDeps } from './dataset-runtime.js';

/** What changes between two configurations, by dataset name. */
export interface ConfigDelta {
  added: string[];
  changed: string[];
  removed: string[];
  unchanged: string[];
}

/** Pure: compare the datasets of two configurations (the `file` a dataset came from does not count). */
export function configDelta(before: Record<string, DatasetConfig>, after: Record<string, DatasetConfig>): ConfigDelta {
  const d: ConfigDelta = { added: [], changed: [], removed: [], unchanged: [] };
  const same = (a: DatasetConfig, b: DatasetConfig) => canonicalJson({ ...a, file: '' }) === canonicalJson({ ...b, file: '' });
  for (const [name, ds] of Object.entries(after)) {
    const old = before[name];
    if (!old) d.added.push(name);
    else if (same(old, ds)) d.unchanged.push(name);
    else d.changed.push(name);
  }
  for (const name of Object.keys(before)) if (!(name in after)) d.removed.push(name);
  return d;
}

/**
 * The datasets the daemon serves. `apply` brings the set in line with a
 * configuration: new datasets start (journal resume first), changed ones are
 * reconfigured in place (their queue and in-flight sync carry on), removed
 * ones stop after their running job; a watch that failed is tried again.
 */
export class DatasetSet {
  readonly #runtimes = new Map<string, DatasetRuntime>();
  readonly #deps: RuntimeDeps;
  readonly #log: Logger;

  constructor(deps: RuntimeDeps) {
    this.#deps = deps;
    this.#log = deps.logger;
  }

  /** A served dataset by name. */
  get(name: string): DatasetRuntime | undefined {
    return this.#runtimes.get(name);
  }

  /** Names of the served datasets. */
  names(): string[] {
    return [...this.#runtimes.keys()].sort();
  }

  /**
   * Serve exactly the datasets of `datasets`; returns what changed. A dataset
   * whose config changed, or that is in `rekeyed` (its key changed), has its
   * pending retry run now.
   */
  async apply(datasets: Record<string, DatasetConfig>, timezone: string, rekeyed: readonly string[] = []): Promise<ConfigDelta> {
    const before: Record<string, DatasetConfig> = {};
    for (const [n, r] of this.#runtimes) before[n] = r.config;
    const delta = configDelta(before, datasets);
    this.#deps.timezone = timezone;
    for (const name of delta.removed) {
      const r = this.#runtimes.get(name)!;
      this.#runtimes.delete(name);
      await r.stop();
    }
    // Unchanged datasets too: a reload retries a watch that is not running.
    for (const name of [...delta.changed, ...delta.unchanged]) {
      const why = rekeyed.includes(name) ? 'key_changed' : delta.changed.includes(name) ? 'config_changed' : undefined;
      await this.#runtimes.get(name)!.reconfigure(datasets[name]!, why);
    }
    for (const name of delta.added) {
      const r = new DatasetRuntime(datasets[name]!, this.#deps);
      this.#runtimes.set(name, r);
      await r.start();
    }
    this.#log.debug(event('config.loaded', { ...delta }), 'datasets applied');
    return delta;
  }

  /** Resolves when no dataset has work waiting or running. */
  async idle(): Promise<void> {
    await Promise.all([...this.#runtimes.values()].map((r) => r.idle()));
  }

  /** Stop every dataset: triggers first, then each running job finishes. */
  async stop(): Promise<void> {
    const all = [...this.#runtimes.values()];
    this.#runtimes.clear();
    await Promise.all(all.map((r) => r.stop()));
  }
}
