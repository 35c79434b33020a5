/** The dataset API client: typed calls, wire schemas, errors. */
export * from './client.js';
export * from './errors.js';
export * from './wire.js';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.js';
export { keyHash, limiterFor, RateLimiter, WINDOW_MS, type Admission, type SharedRateWindow } from './rate-limiter.js';
export type { ClientStats, RequestEvent } from './http.js';
