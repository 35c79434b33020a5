import { ConnectorError, type ErrorAction, type ErrorContext } from '../errors.js';
import type { RowError } from './wire.js';

/**
 * Typed errors of the dataset API client. Callers switch on `code` (the
 * server's code, or one of the client-side codes below) and `action`; never
 * on message text. No property of an ApiError holds request headers: causes
 * are reduced to `{name, code, message}` (see `scrubCause`).
 */

/** Codes the client itself raises (no server answer to take a code from). */
export const CLIENT_CODES = {
  /** The connection failed before or while talking to the server; safe requests were already retried. */
  NETWORK_ERROR: 'NETWORK_ERROR',
  /** No answer within the request timeout; safe requests were already retried. */
  TIMEOUT: 'TIMEOUT',
  /** A request that is not safe to repeat was sent and its answer was lost: re-read before deciding. */
  OUTCOME_UNKNOWN: 'OUTCOME_UNKNOWN',
  /** The server answered with a body the wire schemas (A1–A35) do not describe. */
  BAD_RESPONSE: 'BAD_RESPONSE',
  /** The caller's AbortSignal fired while waiting (limiter, backoff or poll). */
  ABORTED: 'ABORTED',
  /** A request bound to one key (HttpRequest.onlyKey) was not sent: the key in use changed (read again after a 401). */
  KEY_CHANGED: 'KEY_CHANGED',
} as const;

/** One row of a 422 validation answer or of a failed job (A3). */
export type { RowError };

export interface ApiErrorFields {
  status: number | null;
  code: string;
  message: string;
  details?: Record<string, unknown>;
  rowErrors?: RowError[];
  currentEtag?: string | null;
  retryAfterMs?: number | null;
  attempts?: number;
  method?: string;
  path?: string;
  cause?: unknown;
  /** Applied to the cause chain's messages (removes the key). */
  redact?: (text: string) => string;
  context?: ErrorContext;
}

/** An error of the dataset API: HTTP status (null when no answer came), code, details, what to do next. */
export class ApiError extends ConnectorError {
  readonly status: number | null;
  readonly details: Record<string, unknown>;
  /** A3: row numbers and fields of a 422 validation failure; empty otherwise. */
  readonly rowErrors: RowError[];
  /** A2: the active-version ETag the server reported with a 412, e.g. `"v12"`. */
  readonly currentEtag: string | null;
  /** True when the same request may succeed later without any change (429, 5xx, network, timeout). */
  readonly retryable: boolean;
  /** A4: the server's Retry-After in milliseconds, when it sent one. */
  readonly retryAfterMs: number | null;
  /** How many times the request was sent (1 = not retried). */
  readonly attempts: number;

  constructor(f: ApiErrorFields) {
    const redact = f.redact ?? ((t: string) => t);
    super(f.code, redact(f.message), {
      action: actionFor(f.status, f.code),
      cause: f.cause === undefined ? undefined : scrubCause(f.cause, redact),
      context: {
        ...f.context,
        ...(f.status !== null ? { status: f.status } : {}),
        ...(f.method ? { method: f.method } : {}),
        ...(f.path ? { path: f.path } : {}),
      },
    });
    this.name = 'ApiError';
    this.status = f.status;
    // Server text could echo anything back; nothing of it keeps the key.
    this.details = f.details ? (JSON.parse(redact(JSON.stringify(f.details))) as Record<string, unknown>) : {};
    this.rowErrors = f.rowErrors ? (JSON.parse(redact(JSON.stringify(f.rowErrors))) as RowError[]) : [];
    this.currentEtag = f.currentEtag ?? null;
    this.retryable = isRetryable(f.status, f.code);
    this.retryAfterMs = f.retryAfterMs ?? null;
    this.attempts = f.attempts ?? 1;
  }
}

/** The same request may succeed later unchanged: throttling, server trouble, lost connections. */
export function isRetryable(status: number | null, code: string): boolean {
  if (code === CLIENT_CODES.NETWORK_ERROR || code === CLIENT_CODES.TIMEOUT) return true;
  if (status === 429) return true;
  return status !== null && status >= 500;
}

// What the supervisor does next, by code first and by status for codes we do not know.
const ACTION_BY_CODE: Record<string, ErrorAction> = {
  UNAUTHORIZED: 'stop', // key missing, revoked or expired: a person must fix the key
  API_DISABLED: 'stop',
  ACCOUNT_KEY_NOT_SUPPORTED: 'stop',
  FORBIDDEN: 'stop', // the key lacks a role the configuration needs
  PUBLISH_REQUIRED: 'hold', // a person with the publish role must publish in the portal
  DATASET_NOT_FOUND: 'stop',
  RECORD_NOT_FOUND: 'retry', // our snapshot drifted: re-read and plan again
  VERSION_NOT_FOUND: 'hold',
  CONFLICT: 'retry', // spec: preview again and resubmit
  DRAFT_PENDING: 'hold', // someone's draft blocks us; policy on_foreign_draft decides
  DRAFT_EXPIRED: 'retry', // the draft is gone: plan again from the active version
  PRECONDITION_FAILED: 'retry', // A2: re-read and plan again
  VALIDATION_FAILED: 'reject',
  MAPPING_REQUIRED: 'reject',
  IDEMPOTENCY_KEY_REUSED: 'stop', // a bug of ours: a key was reused for a different body
  MASS_DELETE_GUARD: 'hold', // A5
  EMPTY_RESULT_GUARD: 'hold', // A5
  RATE_LIMITED: 'retry',
  JOB_IN_PROGRESS: 'retry',
  NETWORK_ERROR: 'retry',
  TIMEOUT: 'retry',
  OUTCOME_UNKNOWN: 'retry', // after re-reading
  ABORTED: 'retry',
  KEY_CHANGED: 'retry', // plan again: the new key has to show what it does first (issue 11)
  BAD_RESPONSE: 'stop', // the wire assumptions are wrong for this server: a person must look
};

/** The action for a status and code: known codes first, then by status class. */
export function actionFor(status: number | null, code: string): ErrorAction {
  const known = ACTION_BY_CODE[code];
  if (known) return known;
  if (status === null) return 'retry';
  if (status === 422) return 'reject'; // spec: "VALIDATION_FAILED, MAPPING_REQUIRED and others"
  if (status === 412 || status === 409 || status === 429 || status >= 500) return 'retry';
  return 'stop'; // other 4xx: our request or our key is wrong
}

/** A cause reduced to name, code and message, so no header or socket object travels with an error. */
export interface ScrubbedCause {
  name: string;
  code?: string;
  message: string;
}

/**
 * Reduce any thrown value (and its cause chain, two levels) to plain text
 * fields; `redact` is applied to every message (the client passes one that
 * removes its key).
 */
export function scrubCause(
  err: unknown,
  redact: (text: string) => string = (t) => t,
  depth = 0,
): ScrubbedCause & { cause?: ScrubbedCause } {
  if (err && typeof err === 'object') {
    const e = err as { name?: unknown; code?: unknown; message?: unknown; cause?: unknown };
    const out: ScrubbedCause & { cause?: ScrubbedCause } = {
      name: typeof e.name === 'string' ? e.name : 'Error',
      message: typeof e.message === 'string' ? redact(e.message) : '',
    };
    if (typeof e.code === 'string') out.code = e.code;
    if (e.cause !== undefined && depth < 2) out.cause = scrubCause(e.cause, redact, depth + 1);
    return out;
  }
  return { name: 'Error', message: redact(String(err)) };
}
