import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HealthState } from './health-state.js';
import type { DaemonMetrics } from './metrics.js';

/** A running /healthz and /metrics listener. */
export interface HealthServer {
  /** The address actually bound (port 0 picks a free one). */
  address: { host: string; port: number };
  close(): Promise<void>;
}

/** Split "host:port" (IPv6 in brackets). */
export function parseListen(listen: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(listen);
  if (!m) throw new TypeError(`expected host:port, got ${listen}`);
  return { host: m[1] ?? m[2]!, port: Number(m[3]) };
}

/**
 * Serve GET /healthz (the daemon is alive: 200 ok, 503 degraded with reasons,
 * as JSON), GET /readyz (200 once every dataset has started and none has
 * stopped, else 503 naming them) and GET /metrics (Prometheus text) on
 * `listen`; nothing else.
 */
export async function startHealthServer(listen: string, health: HealthState, metrics: DaemonMetrics): Promise<HealthServer> {
  const { host, port } = parseListen(listen);
  const server: Server = createServer((req, res) => {
    void (async () => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        res.writeHead(405, { allow: 'GET, HEAD' }).end();
      } else if (path === '/healthz') {
        const report = health.report();
        res.writeHead(report.status === 'ok' ? 200 : 503, { 'content-type': 'application/json' });
        res.end(`${JSON.stringify(report)}\n`);
      } else if (path === '/readyz') {
        const r = health.readiness();
        res.writeHead(r.ready ? 200 : 503, { 'content-type': 'application/json' });
        res.end(`${JSON.stringify(r)}\n`);
      } else if (path === '/metrics') {
        const text = await metrics.registry.metrics();
        res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text);
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
      }
    })().catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  return {
    address: { host: addr.address, port: addr.port },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
