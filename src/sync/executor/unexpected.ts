import { dirname } from 'node:path';
import { ConnectorError } from '../../errors.js';

const RETRY_ERRNO = new Set(['ENOSPC', 'EDQUOT', 'EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY', 'EIO']);

/**
 * Any failure as a ConnectorError with a code and an action, so a sync
 * reports it instead of throwing (house style 5): the state database busy
 * (retry) or failing (stop), a file system error (retry when it may pass,
 * else stop), anything else INTERNAL (stop: it would fail the same way again).
 */
export function asConnectorError(err: unknown, dataset: string, statePath?: string): ConnectorError {
  if (err instanceof ConnectorError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  const context = { dataset };
  if (code === 'SQLITE_FULL' || code === 'ENOSPC' || code === 'EDQUOT') {
    // One full disk, whichever write met it first (the state db, a sort run, the changeset): one code, retried.
    const where = statePath !== undefined ? dirname(statePath) : 'the state_dir';
    return new ConnectorError(
      'DISK_FULL',
      `no space left on the disk of ${where} (${code}): the state database and a sync's work files (sorted runs, the changeset) are kept there, and a sync needs about three times its export's records, as JSON, free. Nothing was published; free some space or move state_dir to a larger disk, and the sync is tried again`,
      { action: 'retry', cause: err, context: { ...context, file: where, setting: 'state_dir' } },
    );
  }
  if (typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'))) {
    return new ConnectorError('STATE_BUSY', `the state database is locked by another process (${code})`, { action: 'retry', cause: err, context });
  }
  if (typeof code === 'string' && code.startsWith('SQLITE_')) {
    return new ConnectorError('STATE_ERROR', `the state database failed: ${code}: ${message}`, { action: 'stop', cause: err, context });
  }
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) {
    return new ConnectorError('IO_ERROR', `a file could not be read or written: ${message}`, { action: RETRY_ERRNO.has(code) ? 'retry' : 'stop', cause: err, context });
  }
  return new ConnectorError('INTERNAL', `internal error: ${message}`, { action: 'stop', cause: err, context });
}
