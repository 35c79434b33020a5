import { createServer, type IncomingMessage as HttpRequest, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { A2aEmulator, type A2aEmulatorOptions, type RequestRecord } from './emulator.js';
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

/**
 * The HTTP handler of the A2A emulator, mountable under `basePath` (`{base_url}`
 * of the document). Returns false when the path is not its own.
 */
export function a2aRequestHandler(emulator: A2aEmulator, basePath = '', publicUrl: () => string = () => '') {
  return async (req: HttpRequest, res: ServerResponse): Promise<boolean> => {
    const path = (req.url ?? '/').split('?')[0]!;
    const rel = path.startsWith(basePath) ? path.slice(basePath.length) || '/' : undefined;
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
      body = JSON.parse(await readBody(req));
    } catch {
      return send(res, log, 200, protocolError(null, -32700, 'parse error'));
    }
    const rpc = body as { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown } | null;
    if (typeof rpc !== 'object' || rpc === null || rpc.jsonrpc !== '2.0' || typeof rpc.method !== 'string') {
      return send(res, log, 200, protocolError(rpc?.id, -32600, 'invalid request'));
    }
    log.rpcMethod = rpc.method;
    const id = rpc.id;
    switch (rpc.method) {
      case 'message/send':
      case 'message/stream':
        return onMessage(emulator, rpc.method, id, rpc.params, account, req, res, log);
      case 'tasks/resubscribe':
      case 'tasks/cancel': {
        const taskId = (rpc.params as { id?: unknown } | null)?.id;
        const task = typeof taskId === 'string' ? emulator.task(taskId) : undefined;
        const problem = checkOwner(task, account);
        if (problem) return sendError(res, log, id, problem);
        if (rpc.method === 'tasks/resubscribe') return openStream(emulator, task!, id, res);
        if (task!.terminal) return sendError(res, log, id, 'session_not_active');
        emulator.cancel(task!);
        return send(res, log, 200, rpcResult(id, task!.toWire())); // A30: the Task, canceled
      }
      default:
        return send(res, log, 200, protocolError(id, -32601, `method not found: ${rpc.method}`));
    }
  };
}

async function onMessage(
  emulator: A2aEmulator,
  method: 'message/send' | 'message/stream',
  id: unknown,
  params: unknown,
  account: string,
  req: HttpRequest,
  res: ServerResponse,
  log: RequestRecord,
): Promise<boolean> {
  const message = readMessage(params);
  log.message = (params as { message?: unknown } | null)?.message;
  if (!message) return send(res, log, 200, protocolError(id, -32602, 'params.message is not a message'));
  // message/stream is always a call start (document): metadata.to required.
  const d = method === 'message/stream' ? (message.to ? { kind: 'start' as const, to: message.to, goal: message.text } : { kind: 'error' as const, code: 'to_required' as const }) : dispatch(message);
  if (d.kind === 'error') return sendError(res, log, id, d.code);
  if (d.kind === 'answer') {
    const task = emulator.task(d.taskId);
    const problem = checkAnswer(task, account);
    if (problem) return sendError(res, log, id, problem);
    emulator.answer(task!, d.text);
    return send(res, log, 200, rpcResult(id, task!.toWire()));
  }
  if (method === 'message/stream') {
    emulator.startCall(account, d.to, d.goal, method, (task) => {
      // Attached before the first event, so the stream sees the whole call.
      const writer = new SseResponseWriter(res, id, emulator.sse, emulator.takeStreamBreak());
      task.subscribers.add(writer);
      res.on('close', () => task.subscribers.delete(writer));
    });
    return true;
  }
  const task = emulator.startCall(account, d.to, d.goal, method);
  if (emulator.takeDropStart()) {
    res.socket?.destroy(); // the call is placed and charged, the answer lost
    return true;
  }
  return send(res, log, 200, rpcResult(id, task.toWire()));
}

/** tasks/resubscribe: what the client missed (or a snapshot), then live events; closes at once at input-required or a terminal state. */
function openStream(emulator: A2aEmulator, task: EmuTask, id: unknown, res: ServerResponse): boolean {
  const writer = new SseResponseWriter(res, id, emulator.sse, emulator.takeStreamBreak());
  const { backlog, closeNow } = task.attach(writer);
  for (const ev of backlog) writer.write(ev);
  if (closeNow) {
    task.subscribers.delete(writer);
    writer.end();
  } else {
    res.on('close', () => task.subscribers.delete(writer));
  }
  return true;
}

function sendError(res: ServerResponse, log: RequestRecord, id: unknown, code: EmuErrorCode): boolean {
  log.errorCode = code;
  return send(res, log, 200, rpcError(id, code));
}

function send(res: ServerResponse, log: RequestRecord, status: number, body: unknown): boolean {
  log.status = status;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
  return true;
}

async function readBody(req: HttpRequest): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new RangeError('body too large');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
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
