import Database from 'better-sqlite3';
import { closeSync, openSync, readFileSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hasCode } from '../../src/errors.js';
import { openStateDb } from '../../src/snapshot/db.js';
import { SCHEMA_VERSION } from '../../src/snapshot/migrations.js';
import { recs, tempDir } from '../sync/diff-fixtures.js';

let t: ReturnType<typeof tempDir>;
beforeEach(() => (t = tempDir()));
afterEach(() => t.cleanup());

function expectCode(fn: () => unknown, code: string): Error {
  try {
    fn();
  } catch (err) {
    expect(hasCode(err, code), String(err)).toBe(true);
    return err as Error;
  }
  throw new Error(`expected ${code}`);
}

describe('openStateDb', () => {
  it('creates the schema with WAL and synchronous=FULL, and reopens without migrating again', () => {
    const path = join(t.dir, 'nested', 'state.db');
    const db = openStateDb(path);
    expect(db.schemaVersion).toBe(SCHEMA_VERSION);
    expect(db.conn.pragma('journal_mode', { simple: true })).toBe('wal');
    expect(db.conn.pragma('synchronous', { simple: true })).toBe(2); // FULL
    expect(db.conn.pragma('busy_timeout', { simple: true })).toBe(5000);
    db.snapshot('shop').confirm({ activeVersion: 4, upserts: recs(3) });
    db.close();
    const again = openStateDb(path);
    expect(again.schemaVersion).toBe(SCHEMA_VERSION);
    expect(again.snapshot('shop').info()).toMatchObject({ activeVersion: 4, etag: '"v4"', recordCount: 3, ownedCount: 3 });
    again.close();
  });

  it('throws STATE_CORRUPT (stop) for a file that is not a database, naming it and leaving it untouched', () => {
    const path = join(t.dir, 'state.db');
    writeFileSync(path, 'this is not sqlite '.repeat(400));
    const before = readFileSync(path);
    const err = expectCode(() => openStateDb(path), 'STATE_CORRUPT') as Error & { action: string; context: { file: string } };
    expect(err.action).toBe('stop');
    expect(err.context.file).toBe(path);
    expect(err.message).toContain(path);
    expect(err.message).toMatch(/move the file aside/);
    expect(readFileSync(path).equals(before)).toBe(true);
  });

  it('throws STATE_CORRUPT for a SQLite file that is not ours, never re-initialising it', () => {
    const path = join(t.dir, 'other.db');
    const other = new Database(path);
    other.exec('CREATE TABLE mine (x INTEGER)');
    other.close();
    expectCode(() => openStateDb(path), 'STATE_CORRUPT');
    const check = new Database(path);
    expect(check.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all()).toEqual(['mine']);
    check.close();
  });

  it('throws STATE_CORRUPT for damaged pages', () => {
    const path = join(t.dir, 'state.db');
    const db = openStateDb(path);
    db.snapshot('shop').confirm({ activeVersion: 1, upserts: recs(3000) });
    db.conn.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    const size = statSync(path).size;
    expect(size).toBeGreaterThan(4096 * 8);
    const fd = openSync(path, 'r+');
    const garbage = Buffer.alloc(4096 * 3, 0xa5);
    writeSync(fd, garbage, 0, garbage.length, Math.floor(size / 2 / 4096) * 4096);
    closeSync(fd);
    expectCode(() => openStateDb(path), 'STATE_CORRUPT');
  });

  it('refuses a schema newer than this build (STATE_TOO_NEW)', () => {
    const path = join(t.dir, 'state.db');
    openStateDb(path).close();
    const raw = new Database(path);
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    expectCode(() => openStateDb(path), 'STATE_TOO_NEW');
  });

  it('opens an empty (zero-byte) file as a new database', () => {
    const path = join(t.dir, 'state.db');
    writeFileSync(path, '');
    const db = openStateDb(path);
    expect(db.schemaVersion).toBe(SCHEMA_VERSION);
    db.close();
  });
});

/**
 * Another process (a doctor, a cron `sync`, the daemon) writes the state db between this connection's read and its
 * write inside one transaction. Begun deferred, the write then fails SQLITE_BUSY_SNAPSHOT at once (no busy wait
 * helps: the read snapshot is stale), and a CLI sync beside a doctor failed STATE_BUSY. Every transaction that
 * writes takes the write lock first (BEGIN IMMEDIATE), so the other writer waits for it instead.
 */
describe('a transaction that reads, then writes, beside another process writing', () => {
  it('takes the write lock before its first read: the other writer waits, the transaction commits', () => {
    const path = join(t.dir, 'state.db');
    const db = openStateDb(path);
    db.snapshot('shop').recordOutcome('published', { n: 0 });
    const other = new Database(path);
    other.pragma('busy_timeout = 0');
    try {
      let otherWrote: unknown = null;
      db.transaction(() => {
        db.conn.prepare('SELECT count(*) FROM datasets').pluck().get();
        try {
          other.prepare('UPDATE datasets SET last_outcome_detail = ? WHERE dataset = ?').run('"other"', 'shop');
          otherWrote = true;
        } catch (err) {
          otherWrote = (err as { code?: unknown }).code;
        }
        db.snapshot('shop').recordOutcome('published', { n: 1 });
      });
      expect(otherWrote).toBe('SQLITE_BUSY');
      expect(db.conn.prepare('SELECT last_outcome_detail FROM datasets WHERE dataset = ?').pluck().get('shop')).toBe('{"n":1}');
    } finally {
      other.close();
      db.close();
    }
  });
});
