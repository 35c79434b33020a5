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
