import { ConnectorError } from '../errors.js';
import { exitCodeFor as exitCodeForResult, type SyncSummary } from '../sync/outcome.js';

/** Exit codes of every command (sysexits.h where one fits). */
export const ExitCode = {
  /** Done. */
  OK: 0,
  /** Something went wrong (network, server refusal, bad input, internal error). */
  FAILURE: 1,
  /** The command line was wrong. */
  USAGE: 2,
  /** Work is held for a person (guard held, draft waiting for approval). */
  HELD: 3,
  /** A temporary failure: trying again later may work (EX_TEMPFAIL). */
  TEMPFAIL: 75,
  /** The configuration or a key source is unusable (EX_CONFIG). */
  CONFIG: 78,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** Codes of errors that mean "fix the configuration" rather than "try again". */
const CONFIG_CODES = new Set(['CONFIG_INVALID', 'KEY_NOT_FOUND', 'KEY_FILE_PERMISSIONS', 'KEY_UNREADABLE']);

/** The exit code a command returns for an error it could not handle. Decides on code and action only. */
export function exitCodeFor(err: unknown): ExitCodeValue {
  if (!(err instanceof ConnectorError)) return ExitCode.FAILURE;
  if (CONFIG_CODES.has(err.code)) return ExitCode.CONFIG;
  switch (err.action) {
    case 'retry':
      return ExitCode.TEMPFAIL;
    case 'hold':
      return ExitCode.HELD;
    default:
      return ExitCode.FAILURE;
  }
}

/**
 * Codes of a failed sync that pass by themselves: the service unreachable or
 * not answering (after the client's retries), throttled or busy with a job,
 * the dataset or the state db held by another process. A sync summary keeps
 * its failure's code but not its action, so `sync` decides on these codes
 * (the same ones whose errors carry action 'retry').
 */
const TEMPORARY_SYNC_CODES = new Set([
  'NETWORK_ERROR',
  'TIMEOUT',
  'OUTCOME_UNKNOWN',
  'RATE_LIMITED',
  'JOB_IN_PROGRESS',
  'DATASET_BUSY',
  'STATE_BUSY',
  'INTERRUPTED',
]);

/** True when a sync's failure code means "try again later": one of the codes above, or a 5xx the server gave no code for (HTTP_5xx). */
export function isTemporarySyncCode(code: string | null): boolean {
  return code !== null && (TEMPORARY_SYNC_CODES.has(code) || /^HTTP_5\d\d$/.test(code));
}

/** The exit code of a finished sync: by its result, and a failure that passes by itself is 75 (EX_TEMPFAIL), not 1. */
export function exitCodeForSync(summary: Pick<SyncSummary, 'result' | 'code'>): ExitCodeValue {
  if (summary.result === 'failed' && isTemporarySyncCode(summary.code)) return ExitCode.TEMPFAIL;
  return exitCodeForResult(summary.result) as ExitCodeValue;
}
