import { Readable } from 'node:stream';
import type { FormData, Pool } from 'undici';
import type { StreamedBody } from './bodies.js';
import type { z } from 'zod';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { event } from '../log/events.js';
import { redactText, type Secret } from '../secret.js';
import { ApiError, CLIENT_CODES } from './errors.js';
import { AttemptTimer } from './attempt-timer.js';
import type { Admission, RateLimiter } from './rate-limiter.js';
import { decideRetry, isNotSentCode, parseRetryAfter, type FailureKind, type RetryPolicy } from './retry.js';
import { errorBodySchema, preconditionDetailsSchema, rowErrorsInDetailsSchema } from './wire.js';
import { isKeyRefusal, KeyRing, type Rekeyed, type SendOutcome } from './key-ring.js';
import type { HttpResponse } from './response.js';

/**
 * The transport of the API client: one keep-alive undici Pool per client,
 * the key on every request, pacing through the shared limiter, and the retry
 * loop. Everything above it (client.ts) deals in typed values only.
 */

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** One logical request; the loop may send it more than once when `safe`. */
export interface HttpRequest {
  method: HttpMethod;
  /** Path below the dataset base, '' for the base itself, e.g. '/records/A-1'. */
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  json?: unknown;
  form?: FormData;
  /** A body streamed from its source on each attempt (bodies.ts), never built whole. */
  stream?: StreamedBody;
  ifMatch?: string;
  idempotencyKey?: string;
  /** May be repeated after it possibly reached the server (see client.ts for which are). */
  safe: boolean;
  /**
   * Send only with the key of this fingerprint: when the key in use is another
   * (read again after a 401), fail with KEY_CHANGED instead of sending (issue 11:
   * a change that must stay staged goes only through a key that has shown it stages).
   */
  onlyKey?: string;
  signal?: AbortSignal;
}

/** Counters for the engine's summary line and for metrics. */
export interface ClientStats {
  /** Requests put on the wire, retries included. */
  requests: number;
  /** Of those, repeats of an earlier attempt. */
  retries: number;
  /** 429 answers received. */
  throttled: number;
  /** Time spent waiting for the limiter. */
  limiterWaitMs: number;
  /** Time spent in retry backoff. */
  backoffWaitMs: number;
}

/** What the `onRequest` hook hears after each attempt. */
export interface RequestEvent {
  method: HttpMethod;
  path: string;
  attempt: number;
  status: number | null;
  code: string | null;
  durationMs: number;
}

export interface TransportOptions {
  baseUrl: string;
  datasetId: string;
  key: Secret;
  limiter: RateLimiter;
  /** After a 401: read the key's source again; a different key is tried, and kept unless it is refused too (see `send`). */
  rereadKey?: (current: Secret) => Promise<Rekeyed | undefined>;
  policy: RetryPolicy;
  clock: Clock;
  connectTimeoutMs: number;
  requestTimeoutMs: number;
  logger?: Logger;
  onRequest?: (e: RequestEvent) => void;
}

/** Sends requests to one dataset base with auth, pacing, timeouts and retries. */
export class Transport {
  readonly stats: ClientStats = { requests: 0, retries: 0, throttled: 0, limiterWaitMs: 0, backoffWaitMs: 0 };
  readonly #o: TransportOptions;
  /** Made at the first request: an idle daemon need not load undici (issue 18: about 20 MB of an idle daemon's RSS). */
  #pool: Promise<Pool> | undefined;
  readonly #basePath: string;
  /** scheme://host:port of api.base_url, named in network errors. */
  readonly #origin: string;
  readonly #redact: (t: string) => string;
  /** The key and limiter in use, and the switch to a key read again after a 401. */
  readonly #keys: KeyRing;

  constructor(o: TransportOptions) {
    this.#o = o;
    this.#keys = new KeyRing(o);
    const url = new URL(o.baseUrl);
    this.#origin = url.origin;
    this.#basePath = `${url.pathname.replace(/\/+$/, '')}/api/v1/business-datasets/${encodeURIComponent(o.datasetId)}`;
    this.#redact = (t) => redactText(t, this.#keys.all);
  }

  /** Send `req`, retrying what policy and safety allow; throws ApiError for anything but 2xx. */
  async send(req: HttpRequest): Promise<HttpResponse> {
    let reread = false;
    /** The 401 that made this request try a key read again; thrown if that key is refused too. */
    let refused: ApiError | undefined;
    let sentAgainWithPrevious = false;
    /** Sends that were refusals answered by a key change: they do not use up the retry policy's attempts. */
    let resends = 0;
    for (let attempt = 1; ; attempt++) {
      if (req.onlyKey !== undefined && this.#keys.key.fingerprint() !== req.onlyKey) throw this.#keyChanged(req, attempt);
      const sent: { key?: Secret } = {};
      const outcome = await this.#attempt(req, attempt, sent);
      const key = sent.key!;
      this.#keys.judge(key, outcome);
      if ('response' in outcome) return outcome.response;
      const { error, kind } = outcome;
      if (isKeyRefusal(error) && this.#keys.wasRefused(key)) {
        // Sent with a key read again after a 401 that was refused too: the transport is back on the previous key.
        if (refused) throw refused;
        // This request had not been refused with the previous key itself (it went out while the new one
        // was on trial): send it once more as it would have gone. A refusal applied nothing.
        if (!sentAgainWithPrevious) {
          sentAgainWithPrevious = true;
          resends++;
          continue;
        }
        throw error;
      }
      // A 401 is a refusal before anything is applied, so sending again is safe for every request,
      // POST included. Once per request: the key source is read again, and a new key there is tried.
      // The Idempotency-Key goes with the resend unchanged: such keys are scoped to the dataset, not to
      // the API key that sent them (assumed, as A16/A35 say nothing of keys; the emulator keeps them per
      // dataset), so an earlier attempt of this request that reached the server with the old key (a lost
      // answer before the 401) is replayed, not applied twice, when the new key sends it again.
      if (error.status === 401 && !reread && this.#keys.canReread) {
        reread = true;
        if (await this.#keys.rekey(key)) {
          refused = error;
          resends++;
          this.#o.logger?.warn(
            event('api.retry', {
              method: req.method,
              path: req.path,
              status: 401,
              code: error.code,
              attempt,
              delay_ms: 0,
              reason: 'key_changed',
              ...(this.#keys.trialSource ? { key_source: this.#keys.trialSource } : {}),
            }),
            'api key refused; its source holds a new key, retrying with it',
          );
          continue;
        }
      }
      // The policy counts attempts of the request, not sends caused by a key change.
      const decision = decideRetry(this.#o.policy, kind, attempt - resends, req.safe, error.retryAfterMs);
      if (!decision.retry) {
        if (decision.reason === 'unsafe') throw this.#unknownOutcome(req, attempt, error);
        throw error;
      }
      const name = kind === 'throttled' ? 'api.rate_limited' : 'api.retry';
      this.#o.logger?.warn(
        event(name, { method: req.method, path: req.path, status: error.status, code: error.code, attempt, delay_ms: decision.delayMs }),
        'api request retried',
      );
      await this.#wait(req, decision.delayMs, attempt);
    }
  }

  /** Fingerprint of the key in use now (Secret.fingerprint), never the key. */
  get keyId(): string {
    return this.#keys.key.fingerprint();
  }

  #keyChanged(req: HttpRequest, attempt: number): ApiError {
    return new ApiError({
      status: null,
      code: CLIENT_CODES.KEY_CHANGED,
      message: `${req.method} ${req.path} was not sent again: the key changed since it was decided to send it with the previous one`,
      method: req.method,
      path: req.path,
      attempts: attempt - 1,
    });
  }

  /** The connection pool, made (and undici loaded) at the first request. */
  #poolNow(): Promise<Pool> {
    this.#pool ??= import('undici').then(async ({ Pool }) => {
      const pool = new Pool(this.#origin, {
        connect: { timeout: this.#o.connectTimeoutMs },
        headersTimeout: this.#o.requestTimeoutMs,
        bodyTimeout: this.#o.requestTimeoutMs,
        keepAliveTimeout: 4_000,
      });
      // A request after close() fails as it did when the pool was made up front (undici's ClientClosedError).
      if (this.#closing !== undefined) await pool.close();
      return pool;
    });
    return this.#pool;
  }

  /** Close the connection pool (in-flight requests finish first); calling it again is harmless. */
  async close(): Promise<void> {
    this.#closing ??= this.#pool === undefined ? Promise.resolve() : this.#pool.then((p) => p.close());
    await this.#closing;
  }
  #closing: Promise<void> | undefined;

  async #wait(req: HttpRequest, ms: number, attempt: number): Promise<void> {
    try {
      await this.#o.clock.sleep(ms, req.signal);
    } catch (cause) {
      throw this.#aborted(req, attempt, cause);
    }
    this.stats.backoffWaitMs += ms;
  }

  async #attempt(req: HttpRequest, attempt: number, sent: { key?: Secret }): Promise<{ response: HttpResponse } | { error: ApiError; kind: FailureKind }> {
    let admission: Admission;
    // Said before a wait a person would notice (a terminal shows why nothing moves); debug, so never in the journal.
    const ahead = this.#keys.limiter.waitMs();
    if (ahead >= 1_000) this.#o.logger?.debug(event('api.waiting', { method: req.method, path: req.path, wait_ms: ahead, reason: 'rate_budget' }), 'waiting for the rate budget');
    try {
      admission = await this.#keys.limiter.acquire(req.signal);
    } catch (cause) {
      // Not sent: the caller gave up, or the shared window could not be read (STATE_BUSY, retry later).
      if (req.signal?.aborted) throw this.#aborted(req, attempt, cause);
      throw cause;
    }
    this.stats.limiterWaitMs += admission.waitedMs;
    this.stats.requests++;
    if (attempt > 1) this.stats.retries++;
    const started = this.#o.clock.now();
    let result: SendOutcome;
    try {
      result = await this.#dispatch(req, attempt, sent);
    } finally {
      admission.done();
    }
    const status = 'response' in result ? result.response.status : result.error.status;
    const code = 'response' in result ? null : result.error.code;
    const durationMs = this.#o.clock.now() - started;
    this.#o.logger?.debug(event('api.request', { method: req.method, path: req.path, status, code, attempt, duration_ms: durationMs }), 'api request');
    this.#o.onRequest?.({ method: req.method, path: req.path, attempt, status, code, durationMs });
    return result;
  }

  async #dispatch(req: HttpRequest, attempt: number, sent: { key?: Secret }): Promise<{ response: HttpResponse } | { error: ApiError; kind: FailureKind }> {
    const timer = new AttemptTimer(this.#o.requestTimeoutMs);
    // A form's file goes out through undici, whose headersTimeout is the same limit between writes and after the last.
    if (!req.stream && !req.form) timer.arm();
    const signal = req.signal ? AbortSignal.any([timer.signal, req.signal]) : timer.signal;
    const key = this.#keys.key;
    sent.key = key;
    const headers: Record<string, string> = {
      authorization: `Bearer ${key.reveal()}`,
      accept: 'application/json',
      'user-agent': 'dataset-connector',
    };
    if (req.json !== undefined) headers['content-type'] = 'application/json';
    if (req.stream) {
      headers['content-type'] = req.stream.contentType;
      headers['content-length'] = String(req.stream.length);
    }
    if (req.ifMatch) headers['if-match'] = req.ifMatch;
    if (req.idempotencyKey) headers['idempotency-key'] = req.idempotencyKey;
    const body = req.json !== undefined ? JSON.stringify(req.json) : req.stream ? Readable.from(timer.paced(req.stream.open()), { objectMode: false }) : (req.form ?? null);

    let status: number;
    let text: string;
    let resHeaders: Record<string, string | string[] | undefined>;
    try {
      const res = await (await this.#poolNow()).request({ method: req.method, path: this.#pathOf(req), headers, body, signal });
      status = res.statusCode;
      resHeaders = res.headers;
      text = await res.body.text();
      timer.stop();
    } catch (cause) {
      timer.stop();
      if (req.signal?.aborted) {
        // The caller gave up; a non-repeatable request in flight has an unknown outcome.
        const aborted = this.#aborted(req, attempt, cause);
        throw req.safe ? aborted : this.#unknownOutcome(req, attempt, aborted);
      }
      const code = (cause as { code?: unknown })?.code;
      const timedOut = timer.fired || (typeof code === 'string' && /TIMEOUT/.test(code) && code !== 'UND_ERR_CONNECT_TIMEOUT');
      const errno = typeof code === 'string' ? code : (cause as { cause?: { code?: unknown } })?.cause?.code;
      const error = new ApiError({
        status: null,
        code: timedOut ? CLIENT_CODES.TIMEOUT : CLIENT_CODES.NETWORK_ERROR,
        message: timedOut
          ? `no answer from ${this.#origin} within ${this.#o.requestTimeoutMs} ms to ${req.method} ${req.path} (api.request_timeout_ms)`
          : `cannot reach ${this.#origin} (${typeof errno === 'string' ? errno : 'connection failed'}) on ${req.method} ${this.#basePath}${req.path}; check api.base_url and that this host can reach it`,
        method: req.method,
        path: req.path,
        attempts: attempt,
        cause,
        redact: this.#redact,
      });
      // A closed client is our own doing: repeating cannot help.
      if (code === 'UND_ERR_CLOSED' || code === 'UND_ERR_DESTROYED') return { error, kind: 'final' };
      return { error, kind: !timedOut && isNotSentCode(typeof code === 'string' ? code : undefined) ? 'not-sent' : 'transient' };
    }

    const etag = header(resHeaders, 'etag');
    if (status >= 200 && status < 300) {
      let parsed: unknown = null;
      if (text.trim() !== '') {
        try {
          parsed = JSON.parse(text);
        } catch (cause) {
          throw this.#badResponse(req, status, attempt, 'answer is not JSON', cause);
        }
      }
      return { response: { status, etag, replayed: header(resHeaders, 'idempotent-replayed') === 'true', body: parsed } };
    }
    const error = this.#errorFromAnswer(req, status, text, resHeaders, attempt);
    const kind: FailureKind = status === 429 ? 'throttled' : status >= 500 ? 'transient' : 'final';
    if (status === 429) this.stats.throttled++;
    return { error, kind };
  }

  #pathOf(req: HttpRequest): string {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) q.set(k, String(v));
    const qs = q.toString();
    return `${this.#basePath}${req.path}${qs ? `?${qs}` : ''}`;
  }

  #errorFromAnswer(
    req: HttpRequest,
    status: number,
    text: string,
    headers: Record<string, string | string[] | undefined>,
    attempt: number,
  ): ApiError {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const body = errorBodySchema.safeParse(json);
    // A1 says every error has a body; a proxy's HTML page does not, so fall back to the status.
    const code = body.success ? body.data.code : `HTTP_${status}`;
    const details = body.success ? body.data.details : {};
    const rows = rowErrorsInDetailsSchema.safeParse(details);
    const pre = status === 412 ? preconditionDetailsSchema.safeParse(details) : undefined;
    return new ApiError({
      status,
      code,
      message: body.success && body.data.message ? body.data.message : `${req.method} ${req.path} answered ${status}`,
      details,
      rowErrors: rows.success ? rows.data.errors : [],
      currentEtag: pre?.success ? (pre.data.current_etag ?? header(headers, 'etag')) : null,
      retryAfterMs: parseRetryAfter(header(headers, 'retry-after'), this.#o.clock.now()),
      method: req.method,
      path: req.path,
      attempts: attempt,
      redact: this.#redact,
    });
  }

  #badResponse(req: HttpRequest, status: number, attempt: number, what: string, cause?: unknown): ApiError {
    return new ApiError({
      status,
      code: CLIENT_CODES.BAD_RESPONSE,
      message: `${req.method} ${req.path}: ${what}`,
      method: req.method,
      path: req.path,
      attempts: attempt,
      cause,
      redact: this.#redact,
    });
  }

  #aborted(req: HttpRequest, attempt: number, cause: unknown): ApiError {
    return new ApiError({
      status: null,
      code: CLIENT_CODES.ABORTED,
      message: `${req.method} ${req.path} aborted by the caller`,
      method: req.method,
      path: req.path,
      attempts: attempt,
      cause,
      redact: this.#redact,
    });
  }

  #unknownOutcome(req: HttpRequest, attempt: number, last: ApiError): ApiError {
    return new ApiError({
      status: last.status,
      code: CLIENT_CODES.OUTCOME_UNKNOWN,
      message: `${req.method} ${req.path} may or may not have been applied (${last.code}); re-read before deciding`,
      method: req.method,
      path: req.path,
      attempts: attempt,
      cause: last,
      redact: this.#redact,
    });
  }

  /** Parse a 2xx body with a wire schema; a mismatch is BAD_RESPONSE (the assumptions are wrong for this server). */
  parse<T>(req: HttpRequest, res: HttpResponse, schema: z.ZodType<T>): T {
    const r = schema.safeParse(res.body);
    if (r.success) return r.data;
    const issue = r.error.issues[0];
    const where = issue ? `${issue.path.map(String).join('.') || '(body)'}: ${issue.message}` : 'unexpected shape';
    throw this.#badResponse(req, res.status, 1, `answer does not match the wire schema (${where})`);
  }
}

function header(h: Record<string, string | string[] | undefined>, name: string): string | null {
  const v = h[name];
  if (Array.isArray(v)) return v[0] ?? null;
  return v ?? null;
}
