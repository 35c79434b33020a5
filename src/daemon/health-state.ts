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

/**
 * What /healthz says: ok, or degraded with reasons. Each dataset area sets or
 * clears its own reason (`set(ds, 'sync', …)`, `clear(ds, 'sync')`).
 */
export class HealthState {
  #phase: 'starting' | 'running' | 'stopping' = 'starting';
  readonly #datasets = new Set<string>();
  readonly #reasons = new Map<string, HealthReason>();
  #refresh: (() => void) | undefined;

  /** The daemon's phase. */
  setPhase(phase: 'starting' | 'running' | 'stopping'): void {
    this.#phase = phase;
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
