import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStateDb } from '../../src/snapshot/db.js';
import { recs, tempDir } from '../sync/diff-fixtures.js';

/** The permission bits of a path. */
const mode = (path: string) => statSync(path).mode & 0o777;

let t: ReturnType<typeof tempDir>;
let umask: number;
beforeEach(() => {
  t = tempDir();
  umask = process.umask(0o022); // the usual permissive umask of a shell
});
afterEach(() => {
  process.umask(umask);
  t.cleanup();
});

describe('openStateDb creates the state privately, whoever opens it', () => {
  it('a new folder (and any parent it makes) is 0700; state.db, -wal and -shm are 0600 under umask 022', () => {
    const dir = join(t.dir, 'var', 'state');
    const path = join(dir, 'state.db');
    const db = openStateDb(path);
    try {
      db.snapshot('shop').confirm({ activeVersion: 1, upserts: recs(3) }); // a write: WAL in use
      expect(existsSync(`${path}-wal`) && existsSync(`${path}-shm`)).toBe(true);
      expect({ parent: mode(join(t.dir, 'var')), dir: mode(dir), db: mode(path), wal: mode(`${path}-wal`), shm: mode(`${path}-shm`) }).toEqual({
        parent: 0o700,
        dir: 0o700,
        db: 0o600,
        wal: 0o600,
        shm: 0o600,
      });
    } finally {
      db.close();
    }
  });

  it('an existing folder and an existing state.db keep the modes the operator gave them', () => {
    const dir = join(t.dir, 'chosen');
    mkdirSync(dir);
    chmodSync(dir, 0o750);
    const db = openStateDb(join(dir, 'state.db'));
    db.close();
    expect(mode(dir)).toBe(0o750);
    expect(mode(join(dir, 'state.db'))).toBe(0o600); // the file did not exist: made private

    const other = join(t.dir, 'other.db');
    writeFileSync(other, '');
    chmodSync(other, 0o640);
    openStateDb(other).close();
    expect(mode(other)).toBe(0o640);
    expect(mode(t.dir)).toBe(0o700); // mkdtemp's, untouched
  });
});
