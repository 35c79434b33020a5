import { DatasetClient, type DatasetClientOptions } from '../../src/api/client.js';
import { systemClock, type Clock } from '../../src/clock.js';
import { EmulatorClock, startEmulator, type EmulatorSeedInput, type RunningEmulator } from '../../src/emulator/index.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { Secret } from '../../src/secret.js';

/** Dataset and keys of the test world; every role combination the tests need. */
export const DS = 'shop-1';
export const OTHER_DS = 'shop-2';
export const KEYS = {
  full: 'tbd_live_full0000000000000000000001',
  noPublish: 'tbd_live_write0000000000000000000002',
  readOnly: 'tbd_live_read00000000000000000000003',
  legacy: 'tbd_live_legacy000000000000000000004',
  other: 'tbd_live_other00000000000000000000005',
} as const;

/** A valid record with id `id`. */
export function rec(id: string, over: Partial<DatasetRecord> = {}): DatasetRecord {
  return { record_id: id, display_name: `Item ${id}`, api_value: `val-${id}`, aliases: [], attributes: {}, active: true, ...over };
}

/** `n` records A-00001… in id order. */
export function recs(n: number, prefix = 'A'): DatasetRecord[] {
  return Array.from({ length: n }, (_, i) => rec(`${prefix}-${String(i + 1).padStart(5, '0')}`));
}

export interface World extends RunningEmulator {
  clock: EmulatorClock;
  /** A client for `key` (default: the full-role key) sharing the emulator's manual clock. */
  client(key?: string, over?: Partial<DatasetClientOptions>): DatasetClient;
  /** API requests the emulator saw whose path ends with `suffix` (relative to the dataset base). */
  seen(method: string, suffix: string): number;
}

/**
 * An emulator on port 0 with a manual clock that the clients share: a
 * client's backoff, limiter or poll sleep advances the emulator's time
 * instead of waiting, so tests never sleep in real time.
 */
export async function startWorld(opts: { records?: DatasetRecord[]; seed?: Partial<EmulatorSeedInput> } = {}): Promise<World> {
  const clock = new EmulatorClock({ mode: 'manual', startMs: Date.UTC(2025, 0, 6, 9) });
  const running = await startEmulator({
    port: 0,
    clock,
    seed: {
      datasets: [
        {
          id: DS,
          records: opts.records ?? [],
          keys: [
            { key: KEYS.full, roles: ['read', 'write', 'replace', 'publish'] },
            { key: KEYS.noPublish, roles: ['read', 'write', 'replace'] },
            { key: KEYS.readOnly, roles: ['read'] },
            { key: KEYS.legacy, legacy: true },
          ],
        },
        { id: OTHER_DS, keys: [{ key: KEYS.other }] },
      ],
      ...opts.seed,
    },
  });
  const clients: DatasetClient[] = [];
  const base = `/api/v1/business-datasets/${DS}`;
  return {
    ...running,
    clock,
    client(key: string = KEYS.full, over: Partial<DatasetClientOptions> = {}) {
      const c = new DatasetClient({ baseUrl: running.url, datasetId: DS, key: new Secret(key), clock, ...over });
      clients.push(c);
      return c;
    },
    seen(method: string, suffix: string) {
      return running.emulator.requests.filter((r) => r.method === method && r.path === base + suffix).length;
    },
    async close() {
      await Promise.all(clients.map((c) => c.close()));
      await running.close();
    },
  };
}

/** The rejection of `p`, asserted to happen. */
export async function rejectionOf(p: Promise<unknown>): Promise<any> {
  try {
    await p;
  } catch (err) {
    return err;
  }
  throw new Error('expected the promise to reject');
}

/**
 * A client clock that lets time pass only when no request is on the wire:
 * requests take no emulator time, as on a real network where latency is
 * milliseconds against a 60-second window. (A clock that jumps while
 * requests are in flight would log them at the later time and blame the
 * limiter for the test's own time travel.)
 */
export class IdleClock implements Clock {
  readonly clients: DatasetClient[] = [];
  constructor(private readonly w: World) {}
  now(): number {
    return this.w.clock.now();
  }
  after(ms: number, fn: () => void, label: string): () => void {
    return systemClock.after(ms, fn, label);
  }
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    while (this.inFlight() > 0) await new Promise((r) => setImmediate(r));
    signal?.throwIfAborted();
    this.w.clock.advance(Math.max(0, ms));
  }
  private inFlight(): number {
    const sent = this.clients.reduce((n, c) => n + c.stats.requests, 0);
    const answered = this.w.emulator.requests.filter((r) => r.status !== null).length;
    return sent - answered;
  }
}
