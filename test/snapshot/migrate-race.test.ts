import Database from 'better-sqlite3';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hasCode } from '../../src/errors.js';
import { openStateDb } from '../../src/snapshot/db.js';
import { MIGRATIONS, SCHEMA_VERSION } from '../../src/snapshot/migrations.js';
import { tempDir } from '../sync/diff-fixtures.js';

/**
 * Several processes opening one state db at the same moment (the daemon
 * restarting after an upgrade while a cron `sync` starts): each migration runs
 * once, under the write lock, and none of them reports the file as corrupt.
 * Real child processes on the built dist/ (vitest's globalSetup builds it),
 * real SQLite in a temp dir.
 */

const DB_MODULE = pathToFileURL(join(fileURLToPath(new URL('../..', import.meta.url)), 'dist/snapshot/db.js')).href;

// The child imports the module, says "ready", waits for a start time on stdin and spins until then,
// so that every child calls openStateDb within microseconds of the others.
const CHILD = `
import { openStateDb } from ${JSON.stringify(DB_MODULE)};
process.stdout.write('ready\\n');
let input = '';
process.stdin.on('data', (d) => (input += d));
process.stdin.on('end', () => {
  const at = Number(input.trim());
  while (Date.now() < at) {}
  try {
    const db = openStateDb(process.argv[1]);
    process.stdout.write(JSON.stringify({ ok: true, version: db.schemaVersion }) + '\\n');
    db.close();
  } catch (e) {
    process.stdout.write(JSON.stringify({ ok: false, code: e.code, message: e.message }) + '\\n');
  }
});
`;

interface Opened {
  ok: boolean;
  version?: number;
  code?: string;
  message?: string;
}

/** Start `n` processes that open `path` at the same moment; their results. */
async function openTogether(path: string, n: number): Promise<Opened[]> {
  const kids: ChildProcessWithoutNullStreams[] = [];
  const outs: string[] = [];
  const ready: Promise<void>[] = [];
  const closed: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const kid = spawn(process.execPath, ['--input-type=module', '-e', CHILD, path]);
    kids.push(kid);
    outs.push('');
    ready.push(
      new Promise((resolve, reject) => {
        kid.stdout.on('data', (d: Buffer) => {
          outs[i] += d.toString();
          if (outs[i]!.startsWith('ready\n')) resolve();
        });
        kid.on('exit', () => reject(new Error(`child ${i} ended before it was ready`)));
      }),
    );
    let stderr = '';
    kid.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    closed.push(new Promise((resolve, reject) => kid.on('close', (status) => (status === 0 ? resolve() : reject(new Error(`child ${i}: ${stderr}`))))));
  }
  await Promise.all(ready);
  const at = Date.now() + 100;
  for (const kid of kids) kid.stdin.end(`${at}\n`);
  await Promise.all(closed);
  return outs.map((o) => JSON.parse(o.split('\n')[1]!) as Opened);
}

/** A state db as the connector before the boot id column left it (schema version 3). */
function v3Db(path: string): void {
  const conn = new Database(path);
  conn.pragma('journal_mode = WAL');
  for (const m of MIGRATIONS.filter((x) => x.version <= 3)) conn.exec(m.sql);
  conn.pragma('user_version = 3');
  conn.prepare('INSERT INTO datasets (dataset, active_version, etag) VALUES (?, ?, ?)').run('shop-1', 7, '"v7"');
  conn.close();
}

let t: ReturnType<typeof tempDir>;
beforeEach(() => (t = tempDir()));
afterEach(() => t.cleanup());

describe('migrations under concurrent opens (real processes)', () => {
  it('six processes opening one v3 db at once: every open succeeds and each migration ran once', async () => {
    // Before IMMEDIATE migrations with user_version read again inside them, most rounds had
    // "duplicate column name: boot_id" reported as STATE_CORRUPT.
    for (let round = 0; round < 3; round++) {
      const path = join(t.dir, `v3-${round}.db`);
      v3Db(path);
      const results = await openTogether(path, 6);
      expect(results).toEqual(Array.from({ length: 6 }, () => ({ ok: true, version: SCHEMA_VERSION })));
      const db = openStateDb(path);
      const columns = db.conn.prepare("SELECT name FROM pragma_table_info('locks')").pluck().all() as string[];
      expect(columns.filter((c) => c === 'boot_id' || c === 'machine_id').sort()).toEqual(['boot_id', 'machine_id']);
      expect(db.conn.prepare('SELECT active_version FROM datasets WHERE dataset = ?').pluck().get('shop-1')).toBe(7);
      db.close();
    }
  });

  it('six processes creating a new state db at once: one creates it, all open it', async () => {
    const path = join(t.dir, 'fresh', 'state.db');
    const results = await openTogether(path, 6);
    expect(results).toEqual(Array.from({ length: 6 }, () => ({ ok: true, version: SCHEMA_VERSION })));
  });
});

describe('a migration that fails', () => {
  it('is STATE_MIGRATION_FAILED (retry) saying to run again, never STATE_CORRUPT, and leaves the file as it was', () => {
    const path = join(t.dir, 'state.db');
    v3Db(path);
    // A column the next step adds already there: its ALTER TABLE fails inside the migration.
    const raw = new Database(path);
    raw.exec('ALTER TABLE locks ADD COLUMN boot_id TEXT');
    raw.close();
    let err: unknown;
    try {
      openStateDb(path).close();
    } catch (e) {
      err = e;
    }
    expect(hasCode(err, 'STATE_MIGRATION_FAILED'), String(err)).toBe(true);
    const e = err as Error & { action: string; context: Record<string, unknown> };
    expect(e.action).toBe('retry');
    expect(e.context).toMatchObject({ file: path, schema_version: 4 });
    expect(e.message).toContain('duplicate column name: boot_id');
    expect(e.message).toMatch(/rolled back.*nothing in it is lost; do not move it aside.*Run the connector again/);
    const check = new Database(path);
    expect(check.pragma('user_version', { simple: true })).toBe(3);
    expect(check.prepare('SELECT active_version FROM datasets').pluck().get()).toBe(7);
    check.close();
  });
});
