/** One request as the emulator saw it (never the key itself, only its fingerprint). */
export interface RequestLogEntry {
  /** Emulator-clock milliseconds at arrival. */
  time: number;
  method: string;
  path: string;
  query: Record<string, string>;
  keyFingerprint: string | null;
  /** Status sent, or null when the connection was dropped without an answer. */
  status: number | null;
  /** Status the request would have had when it was applied and then dropped. */
  appliedStatus?: number;
  idempotencyKey: string | null;
  replayed: boolean;
  /** Bytes of the request body as received (absent when it was not read). */
  bodyBytes?: number;
  /** The injected fault that acted on it, if any. */
  fault?: 'status' | 'reset' | 'delay' | 'drop';
  errorCode?: string;
}

/** The largest number of entries that fall in any window of `windowMs` (half-open, like A24). */
export function maxInWindow(entries: readonly Pick<RequestLogEntry, 'time'>[], windowMs = 60_000): number {
  const times = entries.map((e) => e.time).sort((a, b) => a - b);
  let best = 0;
  let start = 0;
  for (let end = 0; end < times.length; end++) {
    while ((times[start] as number) <= (times[end] as number) - windowMs) start++;
    best = Math.max(best, end - start + 1);
  }
  return best;
}
