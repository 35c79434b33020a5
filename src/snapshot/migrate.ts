import type Database from 'better-sqlite3';
import { ConnectorError } from '../errors.js';
import { stateBusy, stateCorrupt, stateMigrationFailed, stateTooNew } from './errors.js';
import { MIGRATIONS, SCHEMA_VERSION, type Migration } from './migrations.js';

/**
 * Bring the state database to SCHEMA_VERSION. Several processes may open the
 * same file at once (the daemon restarting after an upgrade while a cron
 * `sync` starts), so each migration runs in its own BEGIN IMMEDIATE
 * transaction, which takes the write lock before reading anything, and reads
 * user_version again inside it: a step another process applied meanwhile is
 * skipped instead of run twice. A file already at SCHEMA_VERSION takes no
 * write lock at all. An error while migrating is never STATE_CORRUPT: the
 * step was rolled back and the file is as it was (STATE_MIGRATION_FAILED).
 */
export function migrate(conn: Database.Database, path: string): void {
  // Quick path, no lock: user_version only ever grows.
  const seen = version(conn);
  if (seen > SCHEMA_VERSION) throw stateTooNew(path, seen, SCHEMA_VERSION);
  if (seen === SCHEMA_VERSION) return;
  for (const m of MIGRATIONS) {
    if (m.version <= seen) continue;
    try {
      conn.transaction(() => step(conn, path, m)).immediate();
    } catch (err) {
      if (err instanceof ConnectorError) throw err;
      if (isBusy(err)) throw stateBusy(path, err);
      throw stateMigrationFailed(path, m, err);
    }
  }
}

/** One migration, inside the write lock: skipped when the file is already past it. */
function step(conn: Database.Database, path: string, m: Migration): void {
  const current = version(conn);
  if (current > SCHEMA_VERSION) throw stateTooNew(path, current, SCHEMA_VERSION);
  if (current >= m.version) return; // another process applied it since we looked
  if (current === 0) {
    const tables = conn.prepare("SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").pluck().get() as number;
    // A file with tables but no version is not ours (or lost its header): never overwrite it.
    if (tables > 0) throw stateCorrupt(path, 'not a dataset-connector state database (no schema version)');
  }
  conn.exec(m.sql);
  m.fill?.(conn);
  conn.pragma(`user_version = ${m.version}`);
}

function version(conn: Database.Database): number {
  return conn.pragma('user_version', { simple: true }) as number;
}

/** SQLITE_BUSY and its extended codes (BUSY_SNAPSHOT, …): another connection holds the file. */
export function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}
