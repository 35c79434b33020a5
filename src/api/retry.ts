/**
 * Retry maths of the API client, pure: which failures are tried again, and
 * how long to wait. The loop that sleeps lives in http.ts with the injected
 * clock.
 *
 * Defaults follow the AWS SDK's "standard" retry mode (SDK v3 constants:
 * 3 attempts, base 100 ms for transient errors and 500 ms for throttling,
 * 20 s cap, full jitter). Throttling gets its own, larger budget because
 * here a 429 is routine rather than exceptional: JOB_IN_PROGRESS lasts as
 * long as another job runs, and RATE_LIMITED usually names the wait (A4).
 */

/** Tunables of the retry loop; every field has a default (DEFAULT_RETRY_POLICY). */
export interface RetryPolicy {
  /** Attempts in total (first send included) for network errors, timeouts and 5xx. */
  maxAttempts: number;
  /** Attempts in total for 429 RATE_LIMITED and JOB_IN_PROGRESS. */
  maxThrottleAttempts: number;
  /** Exponential base for network errors, timeouts and 5xx. */
  baseDelayMs: number;
  /** Exponential base for 429 without Retry-After. */
  throttleBaseDelayMs: number;
  /** No computed backoff exceeds this. */
  maxDelayMs: number;
  /** Random extra on top of a server's Retry-After, so that callers sharing a key don't return in step. */
  retryAfterJitterMs: number;
  /** A Retry-After longer than this is not waited for: the error goes to the caller instead. */
  maxRetryAfterMs: number;
  /** Source of randomness in [0, 1); injected by tests. */
  random: () => number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxAttempts: 3,
  maxThrottleAttempts: 5,
  baseDelayMs: 100,
  throttleBaseDelayMs: 500,
  maxDelayMs: 20_000,
  retryAfterJitterMs: 1_000,
  maxRetryAfterMs: 65_000, // A24: a sliding 60 s window never asks for more than a minute
  random: Math.random,
};

/** Full jitter (AWS architecture blog): uniform in [0, min(cap, base·2^(retry-1))]; `retry` counts from 1. */
export function fullJitterDelay(retry: number, baseMs: number, capMs: number, random: () => number): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(random() * ceiling);
}

/** A4: Retry-After in milliseconds: delta-seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | null {
  if (value === null || value === undefined || value.trim() === '') return null;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

/** How a failed attempt is classed for retrying. */
export type FailureKind =
  /** 429 RATE_LIMITED or JOB_IN_PROGRESS: refused before anything was applied. */
  | 'throttled'
  /** The connection could not be opened: nothing was sent. */
  | 'not-sent'
  /** Network error, timeout or 5xx after the request may have reached the server. */
  | 'transient'
  /** Anything else: a definite answer, not retried. */
  | 'final';

/** The decision for one failed attempt. */
export type RetryDecision = { retry: true; delayMs: number } | { retry: false; reason: 'final' | 'exhausted' | 'unsafe' | 'retry-after-too-long' };

/**
 * Decide whether to send again after attempt number `attempt` (1-based) failed.
 * `safe` says whether the request may be repeated after it possibly reached the server.
 */
export function decideRetry(
  p: RetryPolicy,
  kind: FailureKind,
  attempt: number,
  safe: boolean,
  retryAfterMs: number | null,
): RetryDecision {
  switch (kind) {
    case 'final':
      return { retry: false, reason: 'final' };
    case 'throttled': {
      if (attempt >= p.maxThrottleAttempts) return { retry: false, reason: 'exhausted' };
      if (retryAfterMs !== null) {
        if (retryAfterMs > p.maxRetryAfterMs) return { retry: false, reason: 'retry-after-too-long' };
        return { retry: true, delayMs: retryAfterMs + Math.floor(p.random() * p.retryAfterJitterMs) };
      }
      return { retry: true, delayMs: fullJitterDelay(attempt, p.throttleBaseDelayMs, p.maxDelayMs, p.random) };
    }
    case 'not-sent':
    case 'transient': {
      if (kind === 'transient' && !safe) return { retry: false, reason: 'unsafe' };
      if (attempt >= p.maxAttempts) return { retry: false, reason: 'exhausted' };
      return { retry: true, delayMs: fullJitterDelay(attempt, p.baseDelayMs, p.maxDelayMs, p.random) };
    }
  }
}

/** Node/undici error codes raised before a request left this host: repeating it cannot duplicate anything. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** True when a transport error code means the request was never sent. */
export function isNotSentCode(code: string | undefined): boolean {
  return code !== undefined && NOT_SENT_CODES.has(code);
}
