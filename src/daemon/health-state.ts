import { actionFor } from '../api/errors.js';

/** Why a dataset is not healthy; one reason per topic, replaced when the topic changes. */
export interface HealthReason {
  dataset: string;
  /** What the reason is about: sync, draft, watch, schedule, resume. */
  topic: string;
  /** Stable code (e.g. UNAUTHORIZED, GUARD_HELD, DRAFT_EXPIRING). */
  code: string;
  message: string;
  since: number;
}

/** The body of /healthz. */
export interface HealthReport {
  status: 'ok' | 'degraded' | 'starting' | 'stopping';
  datasets: string[];
  reasons: HealthReason[];
}

/** The body of /readyz. */
export interface ReadinessReport {
  /** Running, every configured dataset started, none stopped. */
  ready: boolean;
  status: HealthReport['status'];
  /** Configured datasets not served (a key that cannot be read) or stopped (a key refused, the API switch off…). */
  notReady: Array<{ dataset: string; code: string; message: string }>;
}

/**
 * What /healthz says: ok, or degraded with reasons. Each dataset area sets or
 * clears its own reason (`set(ds, 'sync', …)`, `clear(ds, 'sync')`).
 */
export class HealthState {
  #phase: 'starting' | 'running' | 'stopping' = 'starting';
  readonly #datasets = new Set<string>();
  #expected: readonly string[] = [];
  readonly #reasons = new Map<string, HealthReason>();
  #refresh: (() => void) | undefined;

  /** The daemon's phase. */
  setPhase(phase: 'starting' | 'running' | 'stopping'): void {
    this.#phase = phase;
  }

  /** The datasets the configuration names (start and each reload): readiness waits for all of them. */
  expect(datasets: readonly string[]): void {
    this.#expected = [...datasets].sort();
  }

  /** A dataset now served. */
  addDataset(dataset: string): void {
    this.#datasets.add(dataset);
  }

  /** A dataset no longer served: its reasons go with it. */
  removeDataset(dataset: string): void {
    this.#datasets.delete(dataset);
    for (const [k, r] of this.#reasons) if (r.dataset === dataset) this.#reasons.delete(k);
  }

  /** Record a problem of `dataset` about `topic` (keeps the first `since` while the code is unchanged). */
  set(dataset: string, topic: string, code: string, message: string, now: number): void {
    const key = `${dataset}\u0000${topic}`;
    const prev = this.#reasons.get(key);
    this.#reasons.set(key, { dataset, topic, code, message, since: prev?.code === code ? prev.since : now });
  }

  /** The problem of `dataset` about `topic` is over. */
  clear(dataset: string, topic: string): void {
    this.#reasons.delete(`${dataset}\u0000${topic}`);
  }

  /**
   * A check run before each report, for reasons another process can end (the
   * daemon reads what the state db holds: a person may have approved from the
   * CLI). A check that fails leaves the reasons as they were.
   */
  refreshWith(check: () => void): void {
    this.#refresh = check;
  }

  /**
   * /readyz: ready once the daemon runs, every configured dataset has started
   * and none has stopped (a reason whose code stops a dataset: UNAUTHORIZED,
   * API_DISABLED, DATASET_NOT_FOUND…, src/api/errors.ts). A held change or a
   * rejected file degrades /healthz but leaves the dataset ready.
   */
  readiness(): ReadinessReport {
    const status = this.report().status;
    const notReady: ReadinessReport['notReady'] = [];
    for (const dataset of this.#expected) {
      const reasons = [...this.#reasons.values()].filter((r) => r.dataset === dataset);
      if (!this.#datasets.has(dataset)) {
        const why = reasons.find((r) => r.topic === 'key');
        notReady.push({ dataset, code: why?.code ?? 'NOT_STARTED', message: why?.message ?? 'not started yet' });
        continue;
      }
      const stop = reasons.find((r) => actionFor(null, r.code) === 'stop');
      if (stop) notReady.push({ dataset, code: stop.code, message: stop.message });
    }
    return { ready: status !== 'starting' && status !== 'stopping' && notReady.length === 0, status, notReady };
  }

  /** The current report. */
  report(): HealthReport {
    try {
      this.#refresh?.();
    } catch {
      // e.g. the state db closed while stopping: report what is known
    }
    const reasons = [...this.#reasons.values()].sort((a, b) => a.dataset.localeCompare(b.dataset) || a.topic.localeCompare(b.topic));
    const status = this.#phase === 'running' ? (reasons.length ? 'degraded' : 'ok') : this.#phase;
    return { status, datasets: [...this.#datasets].sort(), reasons };
  }
}
