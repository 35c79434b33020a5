import { setTimeout as delay } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { replaceBody, type StreamedBody } from '../../src/api/bodies.js';
import { recs, rejectionOf, startWorld, type World } from './harness.js';

/**
 * api.request_timeout_ms on a streamed body: a replace of a million records
 * (175 MB) takes minutes on a shop's uplink, so the limit is the time allowed
 * between chunks and for the answer after the last, not for the whole
 * exchange (which timed out and sent the body again, and again).
 */
describe('a streamed body and the request time limit', () => {
  let w: World;
  beforeEach(async () => {
    w = await startWorld();
  });
  afterEach(async () => {
    await w.close();
  });

  /** The replace body of `n` records, handed out in `pieces` parts with `gap()` awaited between them. */
  function paced(n: number, pieces: number, gap: () => Promise<void>): StreamedBody {
    const { body } = replaceBody(() => recs(n).map((r) => ({ json: JSON.stringify(r) })), { allow_empty: false });
    return {
      contentType: body.contentType,
      length: body.length,
      async *open() {
        const parts: Uint8Array[] = [];
        for await (const c of body.open()) parts.push(c);
        const all = Buffer.concat(parts);
        const size = Math.ceil(all.length / pieces);
        for (let at = 0; at < all.length; at += size) {
          if (at > 0) await gap();
          yield all.subarray(at, at + size);
        }
      },
    };
  }

  it('a body that keeps coming for longer than the limit is sent once and answered', async () => {
    // 12 pieces 150 ms apart: 1.65 s of sending against a 1 s limit, never 1 s without a piece.
    const body = paced(2_000, 12, () => delay(150));
    const c = w.client(undefined, { requestTimeoutMs: 1_000 });
    const { value } = await c.replaceRecordsStreamed(body, { idempotencyKey: 'slow-1' });
    expect(value.job_id).toEqual(expect.any(String));
    expect(w.seen('PUT', '/records')).toBe(1);
  });

  it('a body that stops coming fails as TIMEOUT naming the setting, without a job', async () => {
    let release!: () => void;
    const stalled = new Promise<void>((r) => (release = r));
    const body = paced(2_000, 4, () => stalled);
    const c = w.client(undefined, { requestTimeoutMs: 300, retry: { maxAttempts: 1 } });
    try {
      const err = await rejectionOf(c.replaceRecordsStreamed(body, { idempotencyKey: 'stall-1' }));
      expect(err).toMatchObject({ code: 'TIMEOUT' });
      expect(String(err.message)).toContain('api.request_timeout_ms');
      expect(w.emulator.requests.filter((r) => r.method === 'PUT' && r.status === 202)).toHaveLength(0);
    } finally {
      release();
    }
  });
});
