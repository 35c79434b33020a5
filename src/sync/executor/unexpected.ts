import { ConnectorError } from '../../errors.js';

const RETRY_ERRNO = new Set(['ENOSPC', 'EDQUOT', 'EMFILE', 'ENFILE', 'EAGAIN', 'EBUSY', 'EIO']);

/**
 * Any failure as a ConnectorError with a code and an action, so a sync
 * reports it instead of throwing (house style 5): the state database busy
 * (retry) or failing (stop), a file system error (retry when it may pass,
 * else stop), anything else INTERNAL (stop: it would fail the same way again).
 */
export function asConnectorError(err: unknown, dataset: string): ConnectorError {
  if (err instanceof ConnectorError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  const context = { dataset };
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
