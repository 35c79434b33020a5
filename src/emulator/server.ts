import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { EmulatorClock } from './clock.js';
import { Emulator } from './emulator.js';
import { handleApi } from './api.js';
import { ADMIN_PREFIX, handleAdmin } from './admin.js';
import { applySeed, type EmulatorSeed, type EmulatorSeedInput } from './seed.js';
import { json, type ApiRequest, type ApiResponse } from './http-types.js';
import type { RequestLogEntry } from './request-log.js';

/** Largest request body the emulator reads (uploads included). */
export const MAX_BODY_BYTES = 64 * 1024 * 1024;

/** Options of `startEmulator`. */
export interface StartEmulatorOptions {
  /** Port to listen on; 0 (default) picks a free one. */
  port?: number;
  /** Address to listen on; default 127.0.0.1. */
  host?: string;
  seed?: EmulatorSeed | EmulatorSeedInput;
  clock?: EmulatorClock;
  /** Largest request body read (default MAX_BODY_BYTES); a larger one is answered 413. */
  maxBodyBytes?: number;
}

/** A running emulator. */
export interface RunningEmulator {
  /** Service base, e.g. http://127.0.0.1:8787 (the API is under /api/v1/business-datasets/{id}). */
  url: string;
  emulator: Emulator;
  close(): Promise<void>;
}

/** Start the emulator on node:http; resolves once it listens. */
export async function startEmulator(opts: StartEmulatorOptions = {}): Promise<RunningEmulator> {
  const emulator = new Emulator(opts.clock ? { clock: opts.clock } : {});
  if (opts.seed) applySeed(emulator, opts.seed);
  const sockets = new Set<Socket>();
  const maxBody = opts.maxBodyBytes ?? MAX_BODY_BYTES;
  const server = createServer((req, res) => {
    void serve(emulator, req, res, maxBody);
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  const host = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return {
    url: `http://${urlHost}:${port}`,
    emulator,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

async function readBody(req: IncomingMessage, max = MAX_BODY_BYTES): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > max) return null;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** One HTTP exchange: read, log, faults, handle, then answer (or drop the connection). */
async function serve(emulator: Emulator, req: IncomingMessage, res: ServerResponse, maxBody: number): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://emulator.local');
  const method = (req.method ?? 'GET').toUpperCase();
  try {
    if (url.pathname.startsWith(ADMIN_PREFIX)) {
      const body = (await readBody(req)) ?? Buffer.alloc(0);
      write(res, await handleAdmin(emulator, { method, path: url.pathname, query: url.searchParams, headers: req.headers, body }));
      return;
    }
    const log: RequestLogEntry = {
      time: emulator.clock.now(),
      method,
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      keyFingerprint: null,
      status: null,
      idempotencyKey: null,
      replayed: false,
    };
    emulator.requests.push(log);
    const fault = emulator.faults.match(method, url.pathname);
    if (fault) {
      log.fault = fault.kind;
      if (fault.delayMs > 0) await delay(fault.delayMs);
      if (fault.kind === 'reset') {
        req.socket.destroy();
        return;
      }
      if (fault.kind === 'status') {
        log.status = fault.status;
        log.errorCode = fault.code;
        const headers: Record<string, string> = fault.retryAfterS !== undefined ? { 'retry-after': String(fault.retryAfterS) } : {};
        write(res, json(fault.status, { error: { code: fault.code, message: fault.message, details: {} } }, headers));
        return;
      }
    }
    const body = await readBody(req, maxBody);
    if (body === null) {
      log.status = 413;
      write(res, json(413, { error: { code: 'PAYLOAD_TOO_LARGE', message: `bodies over ${maxBody} bytes are refused`, details: {} } }), true);
      return;
    }
    log.bodyBytes = body.length;
    const apiReq: ApiRequest = { method, path: url.pathname, query: url.searchParams, headers: req.headers, body };
    const answer = await handleApi(emulator, apiReq, log);
    if (fault?.kind === 'drop') {
      // Applied, but the client never hears of it: its outcome is unknown.
      log.appliedStatus = answer.status;
      req.socket.destroy();
      return;
    }
    log.status = answer.status;
    write(res, answer);
  } catch (err) {
    if (!res.headersSent && !res.destroyed) {
      write(res, json(500, { error: { code: 'INTERNAL', message: `emulator error: ${String(err)}`, details: {} } }));
    }
  }
}

function write(res: ServerResponse, answer: ApiResponse, close = false): void {
  const headers: Record<string, string> = { ...answer.headers };
  if (close) headers.connection = 'close';
  if (answer.status === 204 || answer.body === undefined) {
    res.writeHead(answer.status, headers).end();
    return;
  }
  const text = JSON.stringify(answer.body);
  headers['content-type'] = 'application/json; charset=utf-8';
  headers['content-length'] = String(Buffer.byteLength(text));
  res.writeHead(answer.status, headers).end(text);
}

