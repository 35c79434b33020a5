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
  /** Work is held for a person (guard held, draft waiting for approval); `call`: the connector ended the call. */
  HELD: 3,
  /**
   * The outcome of something sent is unknown: `call` placed a call, or may
   * have, that it cannot vouch for. Never a reason to run the command again
   * before checking.
   */
  UNKNOWN_OUTCOME: 4,
  /** The export file given on the command line does not exist or cannot be read (EX_NOINPUT). */
  NOINPUT: 66,
  /** A temporary failure: trying again later may work (EX_TEMPFAIL); also a dataset paused until `resume` (DATASET_PAUSED). */
  TEMPFAIL: 75,
  /** The configuration or a key source is unusable (EX_CONFIG). */
  CONFIG: 78,
  /** Interrupted by Ctrl-C (128 + SIGINT), with nothing left open. */
  INTERRUPTED: 130,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** Codes of errors that mean "fix the configuration" rather than "try again". */
const CONFIG_CODES = new Set(['CONFIG_INVALID', 'KEY_NOT_FOUND', 'KEY_FILE_PERMISSIONS', 'KEY_UNREADABLE', 'KEY_MALFORMED', 'WATCH_FOLDER_UNUSABLE']);

/** Codes of errors that mean "the command line was wrong" (a dataset name not in the configuration). */
const USAGE_CODES = new Set(['UNKNOWN_DATASET', 'UNKNOWN_EXPORT', 'UNKNOWN_FEED', 'BAD_ARGUMENTS', 'POINT_INVALID', 'VERSION_TOO_NEW']);

// For the daemon a missing file is worth retrying (it may be on its way); a file named on the command line is a typo
// or a path that isn't there, so it gets its own code rather than 75.
const INPUT_CODES = new Set(['FILE_NOT_FOUND', 'FILE_UNREADABLE']);

/** The exit code a command returns for an error it could not handle. Decides on code and action only. */
export function exitCodeFor(err: unknown): ExitCodeValue {
  if (!(err instanceof ConnectorError)) return ExitCode.FAILURE;
  if (CONFIG_CODES.has(err.code)) return ExitCode.CONFIG;
  if (USAGE_CODES.has(err.code)) return ExitCode.USAGE;
  if (INPUT_CODES.has(err.code)) return ExitCode.NOINPUT;
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
 * The exit code of a finished sync, by the action its summary carries (the
 * failure's own, src/errors.ts), as exitCodeFor decides for a thrown error:
 * retry (the API unreachable or not answering after the client's retries,
 * throttled or busy, the dataset or state db held by another process, a stop
 * between steps) is 75, hold is 3, reject and stop are 1; the export file
 * missing or unreadable is 66. Published and unchanged are 0; a summary
 * without an action goes by its result.
 */
export function exitCodeForSync(summary: Pick<SyncSummary, 'result' | 'action' | 'code'>): ExitCodeValue {
  if (summary.result === 'published' || summary.result === 'unchanged') return ExitCode.OK;
  if (summary.code !== null && INPUT_CODES.has(summary.code)) return ExitCode.NOINPUT;
  // restore --to-version above the newest version kept: the command line was wrong.
  if (summary.code !== null && USAGE_CODES.has(summary.code)) return ExitCode.USAGE;
  switch (summary.action) {
    case 'retry':
      return ExitCode.TEMPFAIL;
    case 'hold':
      return ExitCode.HELD;
    case 'reject':
    case 'stop':
      return ExitCode.FAILURE;
    case null:
      return exitCodeForResult(summary.result) as ExitCodeValue;
  }
}

/** Worse first: a failure, then try-again-later, a missing input, held for a person, done. */
const SEVERITY: readonly ExitCodeValue[] = [ExitCode.FAILURE, ExitCode.CONFIG, ExitCode.TEMPFAIL, ExitCode.NOINPUT, ExitCode.HELD, ExitCode.OK];

/** The exit code of several syncs: the worst of theirs (SEVERITY). */
export function worstExitCode(codes: readonly ExitCodeValue[]): ExitCodeValue {
  return SEVERITY.find((c) => codes.includes(c)) ?? ExitCode.OK;
}
