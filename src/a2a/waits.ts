/**
 * The waiting maths of a call, pure over the `now` it is given (the loop that
 * sleeps uses the injected clock): how long to wait before asking the
 * service again, and when the patience runs out.
 */

/** How a call waits while the service does not move on (`call_not_started`, an answered question still shown). */
export interface WaitPolicy {
  /** How long the service may keep the connector waiting without progress; then the call is canceled. */
  patienceMs: number;
  /** The first wait before asking again; doubled after each. */
  firstWaitMs: number;
  /** No single wait is longer. */
  maxWaitMs: number;
}

/** The document says "do not abandon the task": minutes, not seconds. */
export const DEFAULT_WAITS: WaitPolicy = { patienceMs: 5 * 60_000, firstWaitMs: 1_000, maxWaitMs: 15_000 };

/** One stretch of waiting without progress: growing waits, cut so the last one ends with the patience. */
export class Patience {
  #since: number;
  #waits = 0;

  constructor(
    readonly policy: WaitPolicy,
    now: number,
  ) {
    this.#since = now;
  }

  /** Something moved on: the waiting starts over. */
  reset(now: number): void {
    this.#since = now;
    this.#waits = 0;
  }

  /** The wait before asking again, or undefined when the patience has run out. */
  nextWait(now: number): number | undefined {
    const left = this.#since + this.policy.patienceMs - now;
    if (left <= 0) return undefined;
    const grown = this.policy.firstWaitMs * 2 ** this.#waits++;
    return Math.max(0, Math.min(this.policy.maxWaitMs, grown, left));
  }

  /** The patience for a person: "5 min", "90 s". */
  describe(): string {
    return formatDuration(this.policy.patienceMs);
  }
}

/** A duration for a person: whole minutes as "5 min", else seconds. */
export function formatDuration(ms: number): string {
  if (ms >= 60_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${Math.round(ms / 100) / 10} s`;
}
