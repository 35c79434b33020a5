import type { ExportConfig } from '../config/exports.js';
import { takersOf } from '../config/exports.js';
import type { DatasetConfig } from '../config/schema.js';
import { ExportRuntime, type ExportDeps } from './fan-out.js';

/** The shared exports the daemon serves; `apply` brings them in line with a configuration, as DatasetSet does for datasets. */
export class ExportSet {
  readonly #runtimes = new Map<string, ExportRuntime>();

  constructor(private readonly deps: ExportDeps) {}

  get(name: string): ExportRuntime | undefined {
    return this.#runtimes.get(name);
  }

  names(): string[] {
    return [...this.#runtimes.keys()].sort();
  }

  /** Serve exactly the exports some served-or-configured feed takes. */
  async apply(exports: Record<string, ExportConfig>, datasets: Record<string, DatasetConfig>, timezone: string): Promise<void> {
    this.deps.timezone = timezone;
    const wanted = new Map(Object.entries(exports).map(([n, e]) => [n, { e, takers: takersOf(datasets, n) }] as const).filter(([, v]) => v.takers.length > 0));
    for (const [name, r] of [...this.#runtimes]) {
      if (wanted.has(name)) continue;
      this.#runtimes.delete(name);
      await r.stop();
    }
    for (const [name, { e, takers }] of wanted) {
      const running = this.#runtimes.get(name);
      if (running) {
        await running.reconfigure(e, takers);
        continue;
      }
      const r = new ExportRuntime(name, e, takers, this.deps);
      this.#runtimes.set(name, r);
      await r.start();
    }
  }

  async idle(): Promise<void> {
    await Promise.all([...this.#runtimes.values()].map((r) => r.idle()));
  }

  async stop(): Promise<void> {
    const all = [...this.#runtimes.values()];
    this.#runtimes.clear();
    await Promise.all(all.map((r) => r.stop()));
  }
}
