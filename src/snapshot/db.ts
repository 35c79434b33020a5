import Database from 'better-sqlite3';
import { chmodSync, closeSync, fchmodSync, mkdirSync, openSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { systemClock, type Clock } from '../clock.js';
import { ConnectorError } from '../errors.js';
import { sqliteMessage, stateBusy, stateCorrupt } from './errors.js';
import { Journal } from './journal.js';
import { LockTable } from './locks.js';
import { isBusy, migrate } from './migrate.js';
import { SCHEMA_VERSION } from './migrations.js';
import { RateWindowTable } from './rate-window.js';
import { SnapshotStore } from './store.js';

/** Options of openStateDb. */
export interface StateDbOptions {
  clock?: Clock;
  /** How long to wait for a lock held by another connection, in ms. Default 5000. */
  busyTimeoutMs?: number;
}

/** The connector's one state database: snapshots, dataset state and the journal. */
export class StateDb {
  readonly journal: Journal;
  /** Per-dataset locks shared by every process using this file. */
  readonly locks: LockTable;
  /** The request window per API key shared by every process using this file (A24). */
  readonly rateWindow: RateWindowTable;
  private readonly stores = new Map<string, SnapshotStore>();

  constructor(
    readonly path: string,
    /** The better-sqlite3 connection; for this module's stores. */
    readonly conn: Database.Database,
    readonly clock: Clock,
  ) {
    this.journal = new Journal(conn, clock);
    this.locks = new LockTable(conn);
    this.rateWindow = new RateWindowTable(conn, path);
  }

  /** The snapshot and state of one dataset (created empty on first use). */
  snapshot(dataset: string): SnapshotStore {
    let s = this.stores.get(dataset);
    if (!s) {
      s = new SnapshotStore(this.conn, dataset, this.clock);
      this.stores.set(dataset, s);
    }
    return s;
  }

  /** Run `fn` in one transaction (nested calls become savepoints). */
  transaction<T>(fn: () => T): T {
    return this.conn.transaction(fn).immediate();
  }

  /** Names of datasets that have state. */
  datasets(): string[] {
    return (this.conn.prepare('SELECT dataset FROM datasets ORDER BY dataset').pluck().all() as string[]).slice();
  }

  /** The schema version of the open file. */
  get schemaVersion(): number {
    return this.conn.pragma('user_version', { simple: true }) as number;
  }

  close(): void {
    if (this.conn.open) this.conn.close();
  }
}

/**
 * Open (or create) the state database at `path`: WAL, synchronous=FULL, a busy
 * timeout, a quick integrity check, then pending migrations. An existing file
 * that is not a readable state database throws STATE_CORRUPT (action stop);
 * it is never re-initialised; a migration that fails is STATE_MIGRATION_FAILED
 * (migrate.ts), never STATE_CORRUPT. A folder or file it creates is private
 * (see createPrivately), for the daemon and every CLI command alike.
 */
/** How long an open waits for another process creating or migrating the state db. */
const OPEN_BUSY_TIMEOUT_MS = 30_000;

export function openStateDb(path: string, options: StateDbOptions = {}): StateDb {
  createPrivately(path);
  let conn: Database.Database;
  try {
    conn = new Database(path, { fileMustExist: false });
  } catch (err) {
    throw stateCorrupt(path, 'cannot open the file', err);
  }
  const busyMs = Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000));
  try {
    // Opening waits longer than a statement does: another process creating or migrating the file holds it for
    // one bounded transaction, which on a loaded shop server (the POS beside us) can outlast a statement's wait.
    conn.pragma(`busy_timeout = ${Math.max(busyMs, OPEN_BUSY_TIMEOUT_MS)}`);
    checkIntegrity(conn, path);
    conn.pragma('journal_mode = WAL');
    conn.pragma('synchronous = FULL');
    conn.pragma('foreign_keys = ON');
    migrate(conn, path);
    conn.pragma(`busy_timeout = ${busyMs}`);
  } catch (err) {
    conn.close();
    if (err instanceof ConnectorError) throw err;
    if (isBusy(err)) throw stateBusy(path, err);
    throw stateCorrupt(path, sqliteMessage(err), err);
  }
  return new StateDb(path, conn, options.clock ?? systemClock);
}

/**
 * Open the state database at `path` only when it exists and already has this
 * build's schema; undefined otherwise. Creates nothing and changes nothing
 * (no folder, file, integrity check or migration): for `doctor`, which
 * reads but must leave the state as it found it. A file that is not a
 * database throws STATE_CORRUPT.
 */
export function openCurrentStateDb(path: string, options: StateDbOptions = {}): StateDb | undefined {
  let conn: Database.Database;
  try {
    conn = new Database(path, { fileMustExist: true });
  } catch (err) {
    if ((err as { code?: unknown }).code === 'SQLITE_CANTOPEN') return undefined;
    throw stateCorrupt(path, 'cannot open the file', err);
  }
  try {
    conn.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 5000))}`);
    conn.pragma('synchronous = FULL');
    if ((conn.pragma('user_version', { simple: true }) as number) !== SCHEMA_VERSION) {
      conn.close();
      return undefined;
    }
  } catch (err) {
    conn.close();
    throw stateCorrupt(path, sqliteMessage(err), err);
  }
  return new StateDb(path, conn, options.clock ?? systemClock);
}

/**
 * Make the state folder (0700, with any parent it needs) and an empty
 * database file (0600) when they do not exist, whatever the umask: the
 * snapshot is the shop's data. SQLite creates -wal and -shm with the mode of
 * the database file, so they are 0600 too. A folder or file that exists keeps
 * its mode: the operator (or systemd's StateDirectoryMode=) chose it, it may
 * not be ours to chmod, and the 0600 files keep the data private in any folder.
 */
function createPrivately(path: string): void {
  const dir = resolve(dirname(path));
  const first = mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (first !== undefined) {
    // mode is masked by the umask: set it exactly on each folder made here, from the deepest up to the first.
    for (let d = dir; ; d = dirname(d)) {
      chmodSync(d, 0o700);
      if (d === first || dirname(d) === d) break;
    }
  }
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600); // only when absent: an existing file is left as it is
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return;
    throw err;
  }
  try {
    fchmodSync(fd, 0o600);
  } finally {
    closeSync(fd);
  }
}

function checkIntegrity(conn: Database.Database, path: string): void {
  // quick_check: every page and index readable, without the slower cross-checks
  // of integrity_check, so opening a large snapshot stays fast.
  const rows = conn.pragma('quick_check') as Array<{ quick_check: string }>;
  const problems = rows.map((r) => r.quick_check).filter((m) => m !== 'ok');
  if (problems.length > 0) throw stateCorrupt(path, `integrity check: ${problems.slice(0, 3).join('; ')}`);
}
