import { httpError } from './http-error.js';

/** A16: how long an Idempotency-Key is kept. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** A stored answer, replayed for a repeat with the same key and body. */
export interface StoredAnswer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  /** When the answer carried a job, the replay shows the job as it is now (same job, A16). */
  jobId?: string;
}

interface Entry {
  fingerprint: string;
  storedAt: number;
  answer: StoredAnswer;
}

/**
 * A16/A35: answers remembered by (dataset, Idempotency-Key) for 24 hours of
 * emulator time. The fingerprint covers method, path, query and the canonical
 * body, so the same key on another request is a reuse too.
 */
export class IdempotencyStore {
  readonly #entries = new Map<string, Entry>();

  /** The stored answer for a repeat, null for a new key; throws 422 IDEMPOTENCY_KEY_REUSED on a different body. */
  lookup(dataset: string, key: string, fingerprint: string, now: number): StoredAnswer | null {
    const id = `${dataset}\u0000${key}`;
    const entry = this.#entries.get(id);
    if (!entry) return null;
    if (entry.storedAt + IDEMPOTENCY_TTL_MS <= now) {
      this.#entries.delete(id);
      return null;
    }
    if (entry.fingerprint !== fingerprint) {
      throw httpError(422, 'IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used with a different request body', {
        idempotency_key: key,
      });
    }
    return entry.answer;
  }

  /** Remember a successful answer. */
  store(dataset: string, key: string, fingerprint: string, now: number, answer: StoredAnswer): void {
    this.#entries.set(`${dataset}\u0000${key}`, { fingerprint, storedAt: now, answer });
  }

  /** Number of keys held (expired ones included until looked up). */
  get size(): number {
    return this.#entries.size;
  }
}
