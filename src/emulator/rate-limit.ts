/**
 * A24: a sliding 60-second window per key that counts every request, rejected
 * ones included. Time comes from the caller (the emulator clock).
 */
export class SlidingWindowLimiter {
  limitPerWindow: number;
  readonly windowMs: number;
  readonly #hits = new Map<string, number[]>();

  constructor(limitPerWindow = 120, windowMs = 60_000) {
    this.limitPerWindow = limitPerWindow;
    this.windowMs = windowMs;
  }

  /**
   * Count one request at `now` and say whether it is within the limit. When
   * not, `retryAfterS` is when enough of the window has slid away (A4).
   */
  hit(id: string, now: number): { allowed: true } | { allowed: false; retryAfterS: number } {
    const hits = this.#prune(id, now);
    hits.push(now);
    if (hits.length <= this.limitPerWindow) return { allowed: true };
    // The next request is allowed once the window holds at most limit-1 hits.
    const oldestToLeave = hits[hits.length - this.limitPerWindow] ?? now;
    const waitMs = oldestToLeave + this.windowMs - now;
    return { allowed: false, retryAfterS: Math.max(1, Math.ceil(waitMs / 1000)) };
  }

  /** Requests counted for `id` in the window ending at `now`. */
  count(id: string, now: number): number {
    return this.#prune(id, now).length;
  }

  /** Forget every count. */
  reset(): void {
    this.#hits.clear();
  }

  #prune(id: string, now: number): number[] {
    let hits = this.#hits.get(id);
    if (!hits) {
      hits = [];
      this.#hits.set(id, hits);
    }
    let drop = 0;
    while (drop < hits.length && (hits[drop] as number) <= now - this.windowMs) drop++;
    if (drop) hits.splice(0, drop);
    return hits;
  }
}
