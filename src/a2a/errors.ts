import { ConnectorError, type ErrorAction } from '../errors.js';
import type { DocumentErrorCode } from './wire.js';

/**
 * Codes the client raises itself, beside the document's text codes (A29),
 * which are kept as the service spells them (`call_not_started`, …).
 */
export type A2aClientCode =
  /** 401/403: the key is missing, unknown or revoked. */
  | 'UNAUTHORIZED'
  /** Nothing was sent (connection refused, DNS): safe to say no call was placed. */
  | 'NETWORK_ERROR'
  /** A call start may have reached the service but its answer was lost: never retried (it rings a phone). */
  | 'OUTCOME_UNKNOWN'
  /** The service answered something the wire schemas cannot read. */
  | 'BAD_RESPONSE'
  /** No answer within the request timeout (not for call starts: those are OUTCOME_UNKNOWN). */
  | 'TIMEOUT'
  /** A stream of a known task ended before input-required or a terminal state. */
  | 'STREAM_INTERRUPTED'
  /** `metadata.to` is not an E.164 number; checked before anything is sent. */
  | 'INVALID_NUMBER'
  /** A call start without a goal; checked before anything is sent. */
  | 'GOAL_REQUIRED'
  /** An answer without a task id or without text; checked before anything is sent. */
  | 'ANSWER_INVALID'
  /** `call_not_started` kept coming back after the bounded waits. */
  | 'CALL_NOT_CONNECTED'
  /** A JSON-RPC error without one of the document's text codes. */
  | 'RPC_ERROR';

export type A2aErrorCode = DocumentErrorCode | A2aClientCode;

/** What the caller does next with each code. */
const ACTION: Record<A2aErrorCode, ErrorAction> = {
  to_required: 'reject',
  task_not_found: 'reject',
  session_principal_mismatch: 'stop',
  session_not_active: 'reject',
  call_not_started: 'retry',
  assistant_role_required: 'reject',
  assistant_text_required: 'reject',
  UNAUTHORIZED: 'stop',
  NETWORK_ERROR: 'retry',
  OUTCOME_UNKNOWN: 'hold',
  BAD_RESPONSE: 'stop',
  TIMEOUT: 'retry',
  STREAM_INTERRUPTED: 'retry',
  INVALID_NUMBER: 'reject',
  GOAL_REQUIRED: 'reject',
  ANSWER_INVALID: 'reject',
  CALL_NOT_CONNECTED: 'retry',
  RPC_ERROR: 'stop',
};

export interface A2aErrorDetails {
  cause?: unknown;
  /** HTTP status when there was one. */
  status?: number;
  /** JSON-RPC `error.code` when there was one (informative; decide on `code`). */
  rpcCode?: number;
  taskId?: string;
}

/** An error of the call API or of the client around it; decide on `code`, never on the message. */
export class A2aError extends ConnectorError {
  override readonly code: A2aErrorCode;
  readonly rpcCode: number | undefined;
  readonly taskId: string | undefined;

  constructor(code: A2aErrorCode, message: string, details: A2aErrorDetails = {}) {
    super(code, message, {
      action: ACTION[code],
      cause: details.cause,
      context: {
        ...(details.status === undefined ? {} : { status: details.status }),
        ...(details.taskId === undefined ? {} : { taskId: details.taskId }),
      },
    });
    this.name = 'A2aError';
    this.code = code;
    this.rpcCode = details.rpcCode;
    this.taskId = details.taskId;
  }
}

/** The document's code for a text code the service sent, or RPC_ERROR for anything else. */
export function knownCode(text: string | undefined): A2aErrorCode {
  const known: readonly string[] = Object.keys(ACTION);
  return text !== undefined && known.includes(text) && text === text.toLowerCase()
    ? (text as A2aErrorCode)
    : 'RPC_ERROR';
}

/**
 * JSON-RPC numbers read when an error carries no text code (A29 covers the
 * document's codes): what public A2A 0.3 servers answer.
 */
export const RPC_NUMBERS = {
  /** Invalid params; A2A 0.3 servers answer it for a task in a terminal state ("Task … is in terminal state"). */
  invalidParams: -32602,
  /** A2A 0.3 TaskNotCancelableError: the task has ended (A29 gives the same number to session_not_active). */
  taskNotCancelable: -32002,
} as const;

/**
 * The service refused a request about a task because the task has ended:
 * `session_not_active`, `task_not_found` (a server may forget ended tasks),
 * or, without a text code, public A2A's -32602 "terminal state" and -32002
 * "not cancelable". Decided on codes only.
 */
export function refusedAsEnded(err: unknown): err is A2aError {
  if (!(err instanceof A2aError)) return false;
  if (err.code === 'session_not_active' || err.code === 'task_not_found') return true;
  return err.code === 'RPC_ERROR' && (err.rpcCode === RPC_NUMBERS.invalidParams || err.rpcCode === RPC_NUMBERS.taskNotCancelable);
}

