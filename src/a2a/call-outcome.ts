import type { TerminalState } from './wire.js';

/** How a call ended as far as the connector can tell: a terminal state, or `unknown` (A27-states). */
export type OutcomeState = TerminalState | 'unknown';

/**
 * Who ended the call: the call itself (`call`), or the connector, which
 * canceled it because nobody could answer (`no_answer`), the service kept it
 * waiting past the patience (`patience`), a person or the daemon interrupted
 * (`interrupt`), or it lost track of the call (`lost`).
 */
export type EndedBy = 'call' | 'no_answer' | 'patience' | 'interrupt' | 'lost';

/** How a call ended. */
export interface CallOutcome {
  /** Undefined only when the service never gave one (the call start's answer was lost or interrupted): a call may be ringing. */
  taskId: string | undefined;
  /**
   * `rejected`: the service refused the call; `auth-required`: the key lacks an
   * authorisation the service wants (the task was canceled, best effort);
   * `unknown`: the connector cannot tell (A27-states; see `ended`).
   */
  state: OutcomeState;
  /** The call is known to be over (a terminal state, or the service refused it as ended); false: it may still be live. */
  ended: boolean;
  /** Text of the last status message (for `failed` and `rejected`, the reason). */
  reason: string | undefined;
  endedBy: EndedBy;
  answers: number;
  /** Set when the final state came from `tasks/get` (A2A 0.3) because the stream could not be reopened. */
  learnedBy?: 'tasks/get';
  /**
   * The connector's cancel: `done` (the service showed the task ended),
   * `requested` (accepted, not yet shown ended), `already_ended`, `failed`.
   */
  cancel?: 'done' | 'requested' | 'already_ended' | 'failed';
  /** Code of the error behind `lost`, an unknown call start (`OUTCOME_UNKNOWN`) or a failed cancel. */
  code?: string;
}
