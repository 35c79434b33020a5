import { randomUUID } from 'node:crypto';
import type { Dispatcher } from 'undici';
import { redactText, type Secret } from '../secret.js';
import { A2aError, knownCode } from './errors.js';
import { readSse } from './sse.js';
import { errorTextCode, parseTaskEvent, rpcResponseSchema, type RpcResponse, type TaskEvent } from './wire.js';

/** How a request is treated when its answer is lost. */
export interface PostKind {
  /** A call start: its outcome is unknown once sent, and it is never retried. */
  callStart: boolean;
  taskId?: string;
  signal?: AbortSignal;
  /** Wait this long for the answer instead of requestTimeoutMs (message/send: a server may answer when the task next pauses). */
  timeoutMs?: number;
}

export interface TransportOptions {
  baseUrl: string;
  key: Secret;
  requestTimeoutMs: number;
  connectTimeoutMs: number;
  streamIdleTimeoutMs: number;
}

/** Errors undici raises before any byte of the request left: nothing reached the service. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * JSON-RPC over HTTP with the Bearer key (A26): one POST per request, plain
 * JSON or an SSE stream of JSON-RPC responses (A28). Maps every failure to an
 * A2aError; the key never appears in one.
 */
export class Transport {
  readonly #opts: TransportOptions;
  /** undici and its Agent, loaded at the first call: a daemon that places no call need not hold them (issue 18). */
  #undici: Promise<{ request: typeof import('undici').request; dispatcher: Dispatcher }> | undefined;
  #closed = false;

  constructor(opts: TransportOptions) {
    this.#opts = opts;
  }

  #http(): Promise<{ request: typeof import('undici').request; dispatcher: Dispatcher }> {
    this.#undici ??= import('undici').then(async ({ Agent, request }) => {
      const dispatcher = new Agent({ connect: { timeout: this.#opts.connectTimeoutMs } });
      // A call after close() fails as it did when the Agent was made up front.
      if (this.#closed) await dispatcher.close();
      return { request, dispatcher };
    });
    return this.#undici;
  }

  /** GET a JSON document below the base URL (the Agent Card). */
  async getJson(path: string, signal?: AbortSignal): Promise<unknown> {
    const url = this.#opts.baseUrl.replace(/\/+$/, '') + path;
    const res = await this.#send(url, 'GET', undefined, { callStart: false, ...(signal ? { signal } : {}) }, false);
    const text = await this.#text(res, { callStart: false });
    this.#checkStatus(res.statusCode);
    if (res.statusCode !== 200) throw new A2aError('BAD_RESPONSE', `GET ${path} answered HTTP ${res.statusCode}`, { status: res.statusCode });
    try {
      return JSON.parse(text) as unknown;
    } catch (cause) {
      throw new A2aError('BAD_RESPONSE', `GET ${path} did not answer JSON`, { cause, status: res.statusCode });
    }
  }

  /** One JSON-RPC call answered with one response; returns its `result`. */
  async call(method: string, params: unknown, kind: PostKind): Promise<unknown> {
    const res = await this.#post(method, params, kind, false);
    const text = await this.#text(res, kind);
    const response = this.#readResponse(text, res.statusCode, kind);
    return this.#result(response, res.statusCode, kind);
  }

  /**
   * A JSON-RPC call answered with an SSE stream; yields its task events until
   * one is final (acted on at once: a server may keep the connection open
   * after `final: true`) or the service closes the stream.
   */
  async *stream(method: string, params: unknown, kind: PostKind): AsyncGenerator<TaskEvent> {
    const res = await this.#post(method, params, kind, true);
    const contentType = String(res.headers['content-type'] ?? '').toLowerCase();
    if (!contentType.includes('text/event-stream')) {
      // An error (or a single result) answered as plain JSON instead of a stream.
      const text = await this.#text(res, kind);
      const result = this.#result(this.#readResponse(text, res.statusCode, kind), res.statusCode, kind);
      const ev = parseTaskEvent(result);
      if (ev) yield ev;
      if (!ev?.final) throw this.#interrupted(kind, ev?.taskId);
      return;
    }
    let taskId = kind.taskId;
    let last: TaskEvent | undefined;
    try {
      for await (const sse of readSse(res.body)) {
        const scope = { ...kind, ...(taskId ? { taskId } : {}) };
        // Heartbeats some servers send as events (`data: ping`, an empty data line): not a JSON-RPC response, not ours.
        if (!sse.data.trimStart().startsWith('{')) continue;
        let json: unknown;
        try {
          json = JSON.parse(sse.data);
        } catch (cause) {
          throw this.#badEvent('a stream event is not JSON', scope, cause);
        }
        const parsed = rpcResponseSchema.safeParse(json);
        if (!parsed.success) throw this.#badEvent('a stream event is not a JSON-RPC response', scope, parsed.error);
        const result = this.#result(parsed.data, res.statusCode, scope);
        const ev = parseTaskEvent(result, sse.event);
        if (!ev) continue; // a bare Message, an artifact update or something newer: nothing to act on
        taskId = ev.taskId;
        last = ev;
        yield ev;
        if (ev.final) return; // rule 5 of issue 15: `final` is acted on at once, whether or not the server closes
      }
    } catch (err) {
      if (err instanceof A2aError) throw err;
      throw this.#lost(err, kind, taskId, true);
    } finally {
      res.body.destroy();
    }
    // The stream closing at input-required or a terminal state is normal (document, "States").
    if (!last?.final) throw this.#interrupted(kind, taskId);
  }

  async close(): Promise<void> {
    this.#closed = true;
    if (this.#undici !== undefined) await (await this.#undici).dispatcher.close();
  }

  #post(method: string, params: unknown, kind: PostKind, stream: boolean): Promise<Dispatcher.ResponseData> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: randomUUID(), method, params });
    return this.#send(this.#opts.baseUrl, 'POST', body, kind, stream);
  }

  async #send(url: string, method: 'GET' | 'POST', body: string | undefined, kind: PostKind, stream: boolean): Promise<Dispatcher.ResponseData> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.#opts.key.reveal()}`,
      accept: stream ? 'text/event-stream' : 'application/json',
    };
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      const { request, dispatcher } = await this.#http();
      return await request(url, {
        method,
        headers,
        ...(body === undefined ? {} : { body }),
        dispatcher,
        // A stream's headers may come only with its first event; message/send may answer only when the task pauses.
        headersTimeout: kind.timeoutMs ?? (stream ? this.#opts.streamIdleTimeoutMs : this.#opts.requestTimeoutMs),
        bodyTimeout: stream ? this.#opts.streamIdleTimeoutMs : (kind.timeoutMs ?? this.#opts.requestTimeoutMs),
        ...(kind.signal ? { signal: kind.signal } : {}),
      });
    } catch (err) {
      throw this.#lost(err, kind, kind.taskId, stream);
    }
  }

  async #text(res: Dispatcher.ResponseData, kind: PostKind): Promise<string> {
    try {
      return await res.body.text();
    } catch (err) {
      throw this.#lost(err, kind, kind.taskId, false);
    }
  }

  #readResponse(text: string, status: number, kind: PostKind): RpcResponse {
    this.#checkStatus(status);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch (cause) {
      throw this.#unreadable(`HTTP ${status} without a JSON-RPC body`, status, kind, cause);
    }
    const parsed = rpcResponseSchema.safeParse(json);
    if (!parsed.success) throw this.#unreadable(`HTTP ${status} without a JSON-RPC response`, status, kind, parsed.error);
    return parsed.data;
  }

  #result(response: RpcResponse, status: number, kind: PostKind): unknown {
    if (response.error) {
      // A29: decide on the text code in error.data.code, never on the number.
      const code = knownCode(errorTextCode(response.error.data));
      const message = redactText(response.error.message ?? code, [this.#opts.key]);
      throw new A2aError(code, `the call service refused: ${message}`, {
        status,
        rpcCode: response.error.code,
        ...(kind.taskId ? { taskId: kind.taskId } : {}),
      });
    }
    if (status < 200 || status >= 300) throw this.#unreadable(`HTTP ${status}`, status, kind);
    return response.result;
  }

  #checkStatus(status: number): void {
    if (status === 401 || status === 403) {
      throw new A2aError('UNAUTHORIZED', `the call service refused the key (HTTP ${status})`, { status });
    }
  }

  /** A 2xx or 5xx we cannot read: for a call start the call may exist, so it is OUTCOME_UNKNOWN. */
  #unreadable(what: string, status: number, kind: PostKind, cause?: unknown): A2aError {
    const code = kind.callStart && status >= 200 && !(status >= 400 && status < 500) ? 'OUTCOME_UNKNOWN' : 'BAD_RESPONSE';
    return new A2aError(code, `the call service answered ${what}`, { status, ...(cause === undefined ? {} : { cause }) });
  }

  /** A transport failure: before sending nothing happened; after, a call start's outcome is unknown. */
  #lost(err: unknown, kind: PostKind, taskId: string | undefined, stream: boolean): unknown {
    if (kind.signal?.aborted) return err;
    const code = (err as { code?: unknown } | null)?.code;
    const id = taskId ? { taskId } : {};
    if (typeof code === 'string' && NOT_SENT.has(code)) {
      return new A2aError('NETWORK_ERROR', `cannot reach the call service (${code}); nothing was sent`, { cause: err, ...id });
    }
    if (kind.callStart && !taskId) {
      return new A2aError('OUTCOME_UNKNOWN', 'the answer to a call start was lost; the call may have been placed, so it is not retried', {
        cause: err,
      });
    }
    if (taskId && stream) return new A2aError('STREAM_INTERRUPTED', `the connection to task ${taskId} broke`, { cause: err, taskId });
    const timeout = code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT';
    return new A2aError(timeout ? 'TIMEOUT' : 'NETWORK_ERROR', `the call service did not answer (${String(code ?? 'error')})`, {
      cause: err,
      ...id,
    });
  }

  /** An event we cannot read: before a call start's task id is known, the call may still have been placed. */
  #badEvent(what: string, kind: PostKind, cause: unknown): A2aError {
    if (kind.callStart && !kind.taskId) return new A2aError('OUTCOME_UNKNOWN', `${what}; the call may have been placed`, { cause });
    return new A2aError('BAD_RESPONSE', what, { cause, ...(kind.taskId ? { taskId: kind.taskId } : {}) });
  }

  #interrupted(kind: PostKind, taskId: string | undefined): A2aError {
    if (taskId) return new A2aError('STREAM_INTERRUPTED', `the stream of task ${taskId} closed before the call ended or asked`, { taskId });
    if (kind.callStart) return new A2aError('OUTCOME_UNKNOWN', 'the stream of a call start closed before the task was known; the call may have been placed');
    return new A2aError('BAD_RESPONSE', 'the stream closed without a task');
  }
}
