import { inspect } from 'node:util';
import { createServer } from 'node:net';
import { createServer as createHttpServer } from 'node:http';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DatasetClient } from '../../src/api/client.js';
import { Secret } from '../../src/secret.js';
import { rec, recs, rejectionOf, startWorld, type World } from './harness.js';

/** The key must not reach a log line, an error message, or any property of a thrown error. */

const CANARY = 'tbd_live_CANARY7f3a9c1e5b2d4f6a8c0e1b3d5f7a9c';
const UNKNOWN_CANARY = 'tbd_live_CANARYunknown0000000000000000';

let w: World;
let lines: string[];
beforeEach(async () => {
  w = await startWorld({ records: recs(3), seed: {} });
  w.emulator.addKey({ dataset: 'shop-1', key: CANARY });
  lines = [];
});
afterEach(async () => {
  await w.close();
});

function client(over: { key?: string; baseUrl?: string; requestTimeoutMs?: number } = {}): DatasetClient {
  const logger = pino({ level: 'trace' }, { write: (s: string) => void lines.push(s) });
  return w.client(over.key ?? CANARY, {
    logger,
    ...(over.baseUrl ? { baseUrl: over.baseUrl } : {}),
    ...(over.requestTimeoutMs ? { requestTimeoutMs: over.requestTimeoutMs } : {}),
  });
}

/** Every view of an error a log or a supervisor could take. */
function views(err: unknown): string[] {
  const e = err as Error & { cause?: unknown };
  return [
    String(err),
    e.message,
    e.stack ?? '',
    JSON.stringify(err),
    JSON.stringify(e.cause ?? null),
    inspect(err, { depth: null, showHidden: true, getters: true }),
  ];
}

function assertClean(texts: string[], ...keys: string[]): void {
  for (const t of texts) for (const k of keys) expect(t.includes(k), `leaked in: ${t.slice(0, 200)}`).toBe(false);
}

describe('canary key redaction', () => {
  it('no error of any kind, and no log line, holds the key', async () => {
    const c = client();
    const errors: unknown[] = [];
    errors.push(await rejectionOf(c.getRecord('missing')));
    errors.push(await rejectionOf(c.createRecord({ ...rec('B-1'), display_name: '' })));
    w.emulator.faults.add({ method: 'GET', status: 503, count: 3 });
    errors.push(await rejectionOf(c.getDataset()));
    w.emulator.faults.add({ method: 'GET', reset: true, count: 3 });
    errors.push(await rejectionOf(c.getDataset()));
    w.emulator.faults.add({ method: 'POST', applyThenDrop: true });
    errors.push(await rejectionOf(c.createRecord(rec('B-2'))));
    w.emulator.faults.add({ method: 'GET', delayMs: 200, count: 3 });
    errors.push(await rejectionOf(client({ requestTimeoutMs: 50 }).getDataset()));
    const ac = new AbortController();
    ac.abort();
    errors.push(await rejectionOf(c.getDataset({ signal: ac.signal })));
    errors.push(await rejectionOf(client({ key: UNKNOWN_CANARY }).getDataset()));
    errors.push(await rejectionOf(client({ baseUrl: `http://127.0.0.1:${await closedPort()}` }).getDataset()));

    expect(errors.map((e) => (e as { code: string }).code)).toEqual([
      'RECORD_NOT_FOUND',
      'VALIDATION_FAILED',
      'UNAVAILABLE',
      'NETWORK_ERROR',
      'OUTCOME_UNKNOWN',
      'TIMEOUT',
      'ABORTED',
      'UNAUTHORIZED',
      'NETWORK_ERROR',
    ]);
    for (const err of errors) assertClean(views(err), CANARY, UNKNOWN_CANARY);
    expect(lines.length).toBeGreaterThan(10);
    expect(lines.some((l) => l.includes('"event":"api.retry"'))).toBe(true);
    assertClean(lines, CANARY, UNKNOWN_CANARY);
    assertClean([inspect(c, { depth: null, showHidden: true }), JSON.stringify(c.stats)], CANARY);
  });

  it('a server that echoes the Authorization header back does not make the error carry the key', async () => {
    const echo = createHttpServer((req, res) => {
      const auth = String(req.headers.authorization);
      res.writeHead(req.method === 'GET' ? 400 : 500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'ECHO', message: `you sent ${auth}`, details: { authorization: auth, errors: [{ row: 1, message: auth }] } } }));
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', () => r()));
    const c = client({ baseUrl: `http://127.0.0.1:${(echo.address() as { port: number }).port}` });
    const errors = [await rejectionOf(c.getDataset()), await rejectionOf(c.createRecord(rec('B-1')))];
    expect(errors.map((e) => e.code)).toEqual(['ECHO', 'OUTCOME_UNKNOWN']);
    expect(errors[0].message).toBe('you sent Bearer [redacted]');
    for (const err of errors) assertClean(views(err), CANARY);
    assertClean(lines, CANARY);
    await c.close();
    await new Promise<void>((r) => echo.close(() => r()));
  });

  it('the key reaches the server only in the Authorization header', async () => {
    await client().getDataset();
    expect(w.emulator.requests.at(-1)?.keyFingerprint).toMatch(/^[0-9a-f]{16}$/);
  });
});

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const { port } = srv.address() as { port: number };
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}
