import type Database from 'better-sqlite3';
import { stateBusy } from './errors.js';
import { isBusy } from './migrate.js';

/** How long one slot transaction waits for another process's lock before the limiter tries again later. */
const SLOT_BUSY_TIMEOUT_MS = 50;

/** One request for a slot: at most `limit` slots of `keyId` in any `windowMs`, at time `now`. */
export interface SlotRequest {
  /** A fingerprint of the key (never the key). */
  keyId: string;
  limit: number;
  windowMs: number;
  /** Wall-clock ms: processes compare their slots with each other. */
  now: number;
}

/**
 * The rolling request window per API key in the state database, shared by
 * every process using the file (the daemon, cron's `sync`, a person's
 * `approve`): the server counts every request of a key, whoever sent it
 * (A24), so the budget is the machine's, not one process's. Each slot is
 * taken in one short BEGIN IMMEDIATE transaction: count, then insert or
 * not, with no other writer in between.
 */
export class RateWindowTable {
  constructor(
    private readonly conn: Database.Database,
    /** The file, named when another process keeps it locked past the busy timeout. */
    private readonly path: string,
  ) {}

  /** Take a slot (its id); or, when the window is full, take nothing and say in how many ms its oldest slot leaves. */
  take(req: SlotRequest): { slot: number } | { waitMs: number } {
    const { keyId, limit, windowMs, now } = req;
    return this.#write((): { slot: number } | { waitMs: number } => {
      this.conn.prepare('DELETE FROM rate_slots WHERE at <= ?').run(now - windowMs);
      // A slot stamped after now was taken before the wall clock was set back: it still counts at the
      // server for the rest of its minute, which ends no later than a minute from now.
      this.conn.prepare('UPDATE rate_slots SET at = ? WHERE key_fp = ? AND at > ?').run(now, keyId, now);
      const taken = this.conn.prepare('SELECT count(*) FROM rate_slots WHERE key_fp = ?').pluck().get(keyId) as number;
      if (taken < limit) {
        const r = this.conn.prepare('INSERT INTO rate_slots (key_fp, at) VALUES (?, ?)').run(keyId, now);
        return { slot: Number(r.lastInsertRowid) };
      }
      // The window holds `taken` slots; one is free once all but limit-1 of them have left it.
      const leaving = this.conn
        .prepare('SELECT at FROM rate_slots WHERE key_fp = ? ORDER BY at LIMIT 1 OFFSET ?')
        .pluck()
        .get(keyId, taken - limit) as number;
      return { waitMs: Math.max(1, leaving + windowMs - now) };
    });
  }

  /**
   * The request of `slot` was answered at `at`: the slot counts from then
   * (the server counted the request on arrival, before the answer). A slot
   * that already left the window (a request longer than it) is taken again.
   */
  answered(req: { keyId: string; slot: number; at: number }): void {
    this.#write(() => {
      const r = this.conn.prepare('UPDATE rate_slots SET at = max(at, ?) WHERE slot = ? AND key_fp = ?').run(req.at, req.slot, req.keyId);
      if (r.changes === 0) this.conn.prepare('INSERT INTO rate_slots (key_fp, at) VALUES (?, ?)').run(req.keyId, req.at);
    });
  }

  /**
   * One short BEGIN IMMEDIATE transaction; a file locked past a short busy
   * timeout is STATE_BUSY. The wait for the lock blocks the event loop
   * (better-sqlite3 is synchronous), so it is kept short here and the rate
   * limiter waits again asynchronously: another process's long transaction
   * (a snapshot rebuild) must not fail a request nor stall the daemon.
   */
  #write<T>(fn: () => T): T {
    const before = this.conn.pragma('busy_timeout', { simple: true }) as number;
    this.conn.pragma(`busy_timeout = ${Math.min(before, SLOT_BUSY_TIMEOUT_MS)}`);
    try {
      return this.conn.transaction(fn).immediate();
    } catch (err) {
      if (isBusy(err)) throw stateBusy(this.path, err);
      throw err;
    } finally {
      this.conn.pragma(`busy_timeout = ${before}`);
    }
  }

  /** Slots of `keyId` in the window ending at `now` (for status and tests). */
  count(keyId: string, windowMs: number, now: number): number {
    return this.conn.prepare('SELECT count(*) FROM rate_slots WHERE key_fp = ? AND at > ?').pluck().get(keyId, now - windowMs) as number;
  }
}
