import { openSync, writeSync, closeSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { asConnectorError } from '../../src/sync/executor/unexpected.js';

// Review of issue 18: a full disk under state_dir was STATE_ERROR (stop, exit 1) when SQLite met it first and
// IO_ERROR (retry) when a sort run did, naming neither the folder nor the fix.
describe('a failure nobody raised on purpose gets a code and an action', () => {
  it('a full disk is DISK_FULL, retried, naming the state_dir and what it needs, whichever write met it', () => {
    let enospc: unknown;
    const fd = openSync('/dev/full', 'w');
    try {
      writeSync(fd, Buffer.alloc(16));
    } catch (err) {
      enospc = err;
    } finally {
      closeSync(fd);
    }
    expect((enospc as NodeJS.ErrnoException).code).toBe('ENOSPC');
    const sqliteFull = Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    for (const err of [enospc, sqliteFull]) {
      const e = asConnectorError(err, 'shop-1', '/var/lib/dataset-connector/state.db');
      expect(e).toMatchObject({ code: 'DISK_FULL', action: 'retry', context: { dataset: 'shop-1', file: '/var/lib/dataset-connector', setting: 'state_dir' } });
      expect(e.message).toMatch(/no space left on the disk of \/var\/lib\/dataset-connector .*Nothing was published; free some space or move state_dir/);
    }
  });

  it('other SQLite failures stop the dataset; a locked db is retried', () => {
    const db = new Database(':memory:');
    let err: unknown;
    try {
      db.prepare('select * from nowhere').run();
    } catch (e) {
      err = e;
    }
    db.close();
    expect(asConnectorError(err, 'shop-1')).toMatchObject({ code: 'STATE_ERROR', action: 'stop' });
    expect(asConnectorError(Object.assign(new Error('busy'), { code: 'SQLITE_BUSY' }), 'shop-1')).toMatchObject({ code: 'STATE_BUSY', action: 'retry' });
  });
});
