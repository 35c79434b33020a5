import { afterEach } from 'vitest';
import { startEmulator, createEmulatorClock, type RunningEmulator, type Role } from '../../src/emulator/index.js';
import type { DatasetRecord } from '../../src/model/record.js';

export const KEY = 'tbd_live_full_0000000000000001';

/** A record with defaults filled in. */
export function rec(id: string, extra: Partial<DatasetRecord> = {}): DatasetRecord {
  return { record_id: id, display_name: `Name ${id}`, api_value: `api-${id}`, aliases: [], attributes: {}, active: true, ...extra };
}

/** `n` records r0001…rNNNN. */
export function recs(n: number, prefix = 'r'): DatasetRecord[] {
  return Array.from({ length: n }, (_, i) => rec(`${prefix}${String(i + 1).padStart(4, '0')}`));
}

export interface Harness extends RunningEmulator {
  base: string;
  /** fetch relative to the dataset base with the given key (default KEY). */
  call(method: string, path: string, opts?: { key?: string | null; body?: unknown; headers?: Record<string, string>; raw?: string | Uint8Array | FormData | Blob }): Promise<Res>;
}

export interface Res {
  status: number;
  headers: Headers;
  body: any;
}

const running: RunningEmulator[] = [];
afterEach(async () => {
  while (running.length) await running.pop()?.close();
});

/** Start an emulator on port 0 with dataset shop-1, key KEY (all roles by default), manual clock. */
export async function harness(opts: { roles?: Role[]; records?: DatasetRecord[]; legacy?: boolean } = {}): Promise<Harness> {
  const clock = createEmulatorClock({ mode: 'manual', startMs: Date.parse('2025-01-01T00:00:00Z') });
  const r = await startEmulator({
    clock,
    seed: {
      datasets: [
        {
          id: 'shop-1',
          name: 'Shop 1',
          keys: [{ key: KEY, roles: opts.roles ?? ['read', 'write', 'replace', 'publish'], legacy: opts.legacy ?? false }],
          records: opts.records ?? [],
        },
      ],
    },
  });
  running.push(r);
  const base = `${r.url}/api/v1/business-datasets/shop-1`;
  const call: Harness['call'] = async (method, path, o = {}) => {
    const headers: Record<string, string> = { ...(o.headers ?? {}) };
    const key = o.key === undefined ? KEY : o.key;
    if (key !== null) headers.authorization = `Bearer ${key}`;
    let body: string | Uint8Array | FormData | Blob | undefined = o.raw;
    if (o.body !== undefined) {
      body = JSON.stringify(o.body);
      headers['content-type'] = 'application/json';
    }
    const res = await fetch(path.startsWith('http') ? path : base + path, { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
  };
  return { ...r, base, call };
}

/** The A1 error code of an answer. */
export function code(res: Res): string | undefined {
  return res.body?.error?.code;
}

/** A call to the emulator's admin routes (`/__emulator…`), with a JSON body when given; the answer's status and parsed body. */
export async function admin(h: { url: string }, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${h.url}/__emulator${path}`, {
    method,
    ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
