/**
 * The one error base of the connector. Callers decide on `code` and `action`,
 * never on message text (house style 5).
 */

/** What the supervisor does next with a failure. */
export type ErrorAction =
  /** Transient: try the same work again later. */
  | 'retry'
  /** The input is bad: reject these rows or this file; nothing from it is published. */
  | 'reject'
  /** A person must decide (guard held, draft needs publishing in the portal). */
  | 'hold'
  /** This dataset cannot go on (auth, config, corrupt state); others continue. */
  | 'stop';

export interface ErrorContext {
  dataset?: string;
  file?: string;
  line?: number;
  column?: string;
  setting?: string;
  status?: number;
  [key: string]: unknown;
}

export interface ConnectorErrorOptions {
  action: ErrorAction;
  cause?: unknown;
  context?: ErrorContext;
}

/** Base of every error the connector raises on purpose: a stable code, an action and context. */
export class ConnectorError extends Error {
  readonly code: string;
  readonly action: ErrorAction;
  readonly context: ErrorContext;

  constructor(code: string, message: string, options: ConnectorErrorOptions) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ConnectorError';
    this.code = code;
    this.action = options.action;
    this.context = options.context ?? {};
  }
}

/** True when `err` is a ConnectorError with one of the given codes. */
export function hasCode(err: unknown, ...codes: string[]): err is ConnectorError {
  return err instanceof ConnectorError && codes.includes(err.code);
}
