import { ConnectorError } from '../errors.js';

/** The state database cannot be trusted; the dataset stops until a person acts. */
export function stateCorrupt(path: string, what: string, cause?: unknown): ConnectorError {
  return new ConnectorError(
    'STATE_CORRUPT',
    `State database ${path} is unreadable (${what}). It was not changed. ` +
      `Stop the connector, move the file aside (with its -wal and -shm files), and start again: ` +
      `the next start rebuilds the snapshot from the server.`,
    { action: 'stop', cause, context: { file: path } },
  );
}

/** Another process holds the state database longer than the busy timeout. */
export function stateBusy(path: string, cause?: unknown): ConnectorError {
  return new ConnectorError('STATE_BUSY', `State database ${path} is locked by another process.`, {
    action: 'retry',
    cause,
    context: { file: path },
  });
}

/** The state database was written by a newer connector; it is not downgraded. */
export function stateTooNew(path: string, found: number, known: number): ConnectorError {
  return new ConnectorError(
    'STATE_TOO_NEW',
    `State database ${path} has schema version ${found}, newer than this connector's ${known}. Run the newer connector.`,
    { action: 'stop', context: { file: path } },
  );
}

/**
 * A schema migration failed. It ran in one transaction that was rolled back,
 * so the file is as it was: not corrupt, and moving it aside would throw away
 * the journal, ownership marks and held drafts for nothing.
 */
export function stateMigrationFailed(path: string, m: { version: number; description: string }, cause: unknown): ConnectorError {
  return new ConnectorError(
    'STATE_MIGRATION_FAILED',
    `State database ${path} could not be upgraded to schema version ${m.version} (${m.description}): ${sqliteMessage(cause)}. ` +
      `That step was rolled back, so the file is as it was and nothing in it is lost; do not move it aside. ` +
      `Run the connector again: another dataset-connector process upgrading the same file at the same moment is the usual cause. ` +
      `If it fails the same way again, keep the file and report this message.`,
    { action: 'retry', cause, context: { file: path, schema_version: m.version } },
  );
}

/** "CODE: message" of a SQLite error, for messages that name what went wrong. */
export function sqliteMessage(err: unknown): string {
  const e = err as { code?: unknown; message?: unknown } | null;
  return [e?.code, e?.message].filter((x) => typeof x === 'string').join(': ') || 'unknown error';
}
