import { ConnectorError } from '../errors.js';

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
