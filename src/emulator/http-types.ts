import type { IncomingHttpHeaders } from 'node:http';

/** A request as the emulator's handlers see it (body already read). */
export interface ApiRequest {
  method: string;
  /** URL path, percent-encoded as received. */
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** An answer before it is written (or dropped, for applyThenDrop faults). */
export interface ApiResponse {
  status: number;
  headers: Record<string, string>;
  /** JSON body; absent for 204. */
  body?: unknown;
  /** Set when the body carries a job, so an idempotent replay shows that job as it is now (A16). */
  jobId?: string;
}

/** A JSON answer. */
export function json(status: number, body: unknown, headers: Record<string, string> = {}): ApiResponse {
  return { status, headers, body };
}

/** One header's value as a string (first of a repeated header). */
export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const v = headers[name.toLowerCase()];
  return Array.isArray(v) ? v[0] : v;
}
