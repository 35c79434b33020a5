import { createServer, type IncomingMessage as HttpRequest, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { A2aEmulator, type A2aEmulatorOptions, type RequestRecord } from './emulator.js';
import { handleA2aAdmin } from './admin.js';
import { readBody, sendJson } from './http.js';
import { checkAnswer, checkOwner, dispatch, protocolError, readMessage, rpcError, rpcResult, type EmuErrorCode } from './rpc.js';
import { SseResponseWriter } from './sse-writer.js';
import type { EmuTask } from './tasks.js';

const CARD_PATH = '/.well-known/agent-card.json';
const MAX_BODY_BYTES = 1_000_000;

/** The Agent Card: only `capabilities.streaming` is documented; the rest follows A2A 0.3 loosely. */
function agentCard(baseUrl: string): Record<string, unknown> {
  return {
    name: 'Phone agent (emulator)',
    description: 'Places phone calls with a goal and relays the conversation.',
    url: baseUrl,
    version: '0.0.0-emulator',
    protocolVersion: '0.3.0',
    capabilities: { streaming: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [{ id: 'phone-call', name: 'Phone call', description: 'Call metadata.to and pursue the goal' }],
  };
}

/** Path, below `{base_url}`, of the emulator's own control routes (no key; the emulator listens on 127.0.0.1). */
export const A2A_ADMIN_PATH = '/__emulator';

/** Methods answered with an SSE stream: their errors may come as an SSE event (mode errorsAsSse). */
const STREAM_METHODS = new Set(['message/stream', 'tasks/resubscribe']);

/** One JSON-RPC exchange: how to answer it, result or error, as the request's method and the modes want. */
class Exchange {
  constructor(
    readonly emulator: A2aEmulator,
    readonly res: ServerResponse,
    readonly log: RequestRecord,
    readonly id: unknown,
    readonly method: string,
  ) {}

  result(body: unknown): boolean {
    return send(this.res, this.log, 200, rpcResult(this.id, body));
  }

  /** A document error (A29: text code in error.data.code). */
  error(code: EmuErrorCode): boolean {
    this.log.errorCode = code;
    return this.#error(rpcError(this.id, code));
  }

  /** A JSON-RPC error without a document code, as public A2A servers send (e.g. -32602 "terminal state"). */
  protocol(code: number, message: string): boolean {
    this.log.errorCode = String(code);
    return this.#error(protocolError(this.id, code, message));
  }

  /** A stream of this exchange (a call start's stream waits for the first-event gate). */
  stream(gate?: Promise<void>): SseResponseWriter {
    this.log.status = 200;
    return new SseResponseWriter(this.res, this.id, this.emulator.sse, {
      breakAfter: this.emulator.takeStreamBreak(),
      keepOpen: this.emulator.modes.keepOpenAfterFinal,
      ...(gate ? { gate } : {}),
    });
  }

  #error(body: Record<string, unknown>): boolean {
    if (this.emulator.modes.errorsAsSse && STREAM_METHODS.has(this.method)) {
      new SseResponseWriter(this.res, this.id, this.emulator.sse).writeError(body);
      this.log.status = 200;
      return true;
    }
    return send(this.res, this.log, 200, body);
  }
}

/**
 * The HTTP handler of the A2A emulator, mountable under `basePath` (`{base_url}`
 * of the document). Returns false when the path is not its own.
 */
export function a2aRequestHandler(emulator: A2aEmulator, basePath = '', publicUrl: () => string = () => '') {
  return async (req: HttpRequest, res: ServerResponse): Promise<boolean> => {
    const path = (req.url ?? '/').split('?')[0]!;
    const rel = path.startsWith(basePath) ? path.slice(basePath.length) || '/' : undefined;
    if (rel?.startsWith(`${A2A_ADMIN_PATH}/`)) return handleA2aAdmin(emulator, req, res, rel.slice(A2A_ADMIN_PATH.length));
    if (rel !== '/' && rel !== CARD_PATH) return false;
    const log: RequestRecord = { httpMethod: req.method ?? '', path, status: 200 };
    emulator.requests.push(log);
    const account = emulator.accountOf(req.headers.authorization);
    if (account === undefined) {
      // Not shown in the document: 401 with a JSON-RPC error body.
      await drain(req);
      return send(res, log, 401, protocolError(null, -32000, 'missing, unknown or revoked key'));
    }
    log.account = account;
    if (rel === CARD_PATH) {
      if (req.method !== 'GET') return send(res, log, 405, { error: 'method not allowed' });
      return send(res, log, 200, agentCard(publicUrl() + basePath));
    }
    if (req.method !== 'POST') return send(res, log, 405, { error: 'method not allowed' });
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req, MAX_BODY_BYTES));
    } catch {
      return send(res, log, 200, protocolError(null, -32700, 'parse error'));
    }
    const rpc = body as { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown } | null;
    if (typeof rpc !== 'object' || rpc === null || rpc.jsonrpc !== '2.0' || typeof rpc.method !== 'string') {
      return send(res, log, 200, protocolError(rpc?.id, -32600, 'invalid request'));
    }
    log.rpcMethod = rpc.method;
    const ex = new Exchange(emulator, res, log, rpc.id, rpc.method);
    switch (rpc.method) {
      case 'message/send':
      case 'message/stream':
        return onMessage(ex, rpc.method, rpc.params, account);
      case 'tasks/resubscribe':
      case 'tasks/cancel':
      case 'tasks/get':
        return onTaskMethod(ex, rpc.method, rpc.params, account);
      default:
        return ex.protocol(-32601, `method not found: ${rpc.method}`);
    }
  };
}

/** tasks/resubscribe, tasks/cancel (A30) and tasks/get (A2A 0.3), each as the modes say for an ended task. */
function onTaskMethod(ex: Exchange, method: string, params: unknown, account: string): boolean {
  const emulator = ex.emulator;
  if (method === 'tasks/get' && !emulator.modes.tasksGet) return ex.protocol(-32601, `method not found: ${method}`);
  const taskId = (params as { id?: unknown } | null)?.id;
  const task = typeof taskId === 'string' ? emulator.task(taskId) : undefined;
  const problem = checkOwner(task, account);
  if (problem) return ex.error(problem);
  const t = task!;
  const modes = emulator.modes;
  if (method === 'tasks/get') return ex.result(t.read().view);
  if (method === 'tasks/resubscribe') {
    if (t.terminal && modes.endedResubscribe === 'terminal-state') return ex.protocol(-32602, `Task ${t.id} is in terminal state: ${t.state}`);
    if (t.terminal && modes.endedResubscribe === 'session_not_active') return ex.error('session_not_active');
    if (modes.resubscribeReplay === 'live-only' && !t.terminal) {
      // A queue tapped from now on: nothing to tap while the task waits at a question (public A2A: TaskNotFound).
      if (t.closesStreams) return ex.protocol(-32001, 'Task not found');
      const writer = ex.stream();
      t.attachLive(writer);
      ex.res.on('close', () => t.subscribers.delete(writer));
      return true;
    }
    return openStream(ex, t);
  }
  if (t.terminal) return modes.endedErrors === 'public-a2a' ? ex.protocol(-32002, 'Task cannot be canceled') : ex.error('session_not_active');
  emulator.cancel(t);
  return ex.result(modes.cancelReply === 'null' ? null : t.toWire()); // A30: the Task, canceled
}

async function onMessage(ex: Exchange, method: 'message/send' | 'message/stream', params: unknown, account: string): Promise<boolean> {
  const { emulator, log } = ex;
  const message = readMessage(params);
  log.message = (params as { message?: unknown } | null)?.message;
  if (!message) return ex.protocol(-32602, 'params.message is not a message');
  // message/stream is always a call start (document): metadata.to required.
  const d = method === 'message/stream' ? (message.to ? { kind: 'start' as const, to: message.to, goal: message.text } : { kind: 'error' as const, code: 'to_required' as const }) : dispatch(message);
  if (d.kind === 'error') return ex.error(d.code);
  if (d.kind === 'answer') {
    const task = emulator.task(d.taskId);
    const problem = checkAnswer(task, account);
    if (problem === 'session_not_active' && emulator.modes.endedErrors === 'public-a2a') {
      return ex.protocol(-32602, `Task ${task!.id} is in terminal state: ${task!.state}`);
    }
    if (problem) return ex.error(problem);
    if (emulator.modes.answersNotStarted > 0) {
      emulator.modes.answersNotStarted--;
      return ex.error('call_not_started');
    }
    if (emulator.modes.answersInvalidParams > 0) {
      emulator.modes.answersInvalidParams--;
      return ex.protocol(-32602, 'Invalid params');
    }
    const reply = emulator.answer(task!, d.text);
    if (!emulator.modes.blockingSend) return ex.result(reply);
    await task!.untilPaused();
    return ex.result(task!.read().view);
  }
  const gate = emulator.firstEventGate();
  if (method === 'message/stream') {
    emulator.startCall(account, d.to, d.goal, method, (task) => {
      // Attached before the first event, so the stream sees the whole call.
      const writer = ex.stream(gate);
      task.subscribers.add(writer);
      ex.res.on('close', () => task.subscribers.delete(writer));
    });
    return true;
  }
  const task = emulator.startCall(account, d.to, d.goal, method);
  if (emulator.takeDropStart()) {
    ex.res.socket?.destroy(); // the call is placed and charged, the answer lost
    return true;
  }
  if (gate) await gate;
  if (emulator.modes.blockingSend) await task.untilPaused();
  if (ex.res.destroyed) return true; // the client went away before the late reply: it never learns the task id
  return ex.result(task.toWire());
}

/** tasks/resubscribe: what the client missed (or a snapshot), then live events; closes at once at input-required or a terminal state. */
function openStream(ex: Exchange, task: EmuTask): boolean {
  const writer = ex.stream();
  const { backlog, closeNow } = task.attach(writer);
  for (const ev of backlog) writer.write(ev);
  if (closeNow) {
    task.subscribers.delete(writer);
    writer.end();
  } else {
    ex.res.on('close', () => task.subscribers.delete(writer));
  }
  return true;
}

function send(res: ServerResponse, log: RequestRecord, status: number, body: unknown): boolean {
  log.status = status;
  return sendJson(res, status, body);
}

async function drain(req: HttpRequest): Promise<void> {
  for await (const _ of req) void _;
}

/** A running A2A emulator. */
export interface RunningA2aEmulator {
  /** `{base_url}`: the JSON-RPC endpoint; the Agent Card is at `{url}/.well-known/agent-card.json`. */
  url: string;
  emulator: A2aEmulator;
  close(): Promise<void>;
}

/** Start the A2A emulator on its own HTTP server (port 0: any free port). */
export async function startA2aEmulator(opts: A2aEmulatorOptions & { port?: number; host?: string }): Promise<RunningA2aEmulator> {
  const emulator = new A2aEmulator(opts);
  const host = opts.host ?? '127.0.0.1';
  let url = '';
  const handle = a2aRequestHandler(emulator, '', () => url);
  const server = createServer((req, res) => {
    handle(req, res)
      .then((handled) => {
        if (!handled) send(res, { httpMethod: req.method ?? '', path: req.url ?? '', status: 404 }, 404, { error: 'not found' });
      })
      .catch(() => {
        if (!res.headersSent) send(res, { httpMethod: req.method ?? '', path: req.url ?? '', status: 500 }, 500, { error: 'internal' });
        else res.destroy();
      });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  url = `http://${host}:${port}`;
  return {
    url,
    emulator,
    close: async () => {
      for (const t of emulator.tasks.values()) if (!t.terminal) t.transition('canceled', null);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await emulator.idle();
    },
  };
}
