/**
 * Scripted calls of the A2A emulator: what the other party says, when the
 * agent asks a question (input-required), how the call ends, or that it never
 * connects. A script is chosen by the number called.
 */

/** One thing that happens in a connected call, after `afterMs` (default: the emulator's step delay). */
export type ScriptStep =
  /** The other party speaks: a `working` status update with the text. */
  | { say: string; afterMs?: number }
  /**
   * The agent needs a decision: `input-required` with the question; the script
   * waits for an answer. With `hangUp`, the other party ends the call as soon
   * as the answer is spoken: the answer's reply still shows the call live, and
   * the task has ended before the client can reopen it.
   */
  | { ask: string; afterMs?: number; hangUp?: { end: 'completed' | 'canceled'; say?: string } }
  /** The call ends `completed` or `canceled`, with an optional last message. */
  | { end: 'completed' | 'canceled'; say?: string; afterMs?: number }
  /** The call ends `failed` with a reason in the last status update. */
  | { end: 'failed'; reason: string; afterMs?: number }
  /**
   * A2A 0.3 states the document does not list (A27-states): `rejected` ends
   * the call; `auth-required` closes the streams and waits until the task is
   * canceled; `unknown` is a status update after which the call goes on, or,
   * with `hold`, stays `unknown` with every stream of it closed.
   */
  | { state: 'rejected' | 'auth-required' | 'unknown'; say?: string; hold?: boolean; afterMs?: number };

/** A whole call. Without an `end` step it completes after the last step. */
export interface CallScript {
  /**
   * `auto` (default): connects after `connectAfterMs`; `never`: stays `submitted`
   * until the test calls `emulator.connect(taskId)`; `{fail}`: cannot start and
   * goes `submitted` → `failed` with the reason; `{reject}`: refused at once,
   * the start is answered with the task already `rejected`; `{authRequired}`:
   * goes `submitted` → `auth-required` and waits to be canceled (A27-states).
   */
  connect?: 'auto' | 'never' | { fail: string } | { reject: string } | { authRequired: string };
  connectAfterMs?: number;
  steps?: ScriptStep[];
}

/** Scripts by the number called; `default` for any other number. */
export type ScriptBook = Record<string, CallScript>;

/** The script of a call to `to`. */
export function scriptFor(book: ScriptBook, to: string): CallScript {
  return book[to] ?? book.default ?? DEMO_SCRIPT;
}

/** A short conversation with two questions, used by `call --emulator` and when no script matches. */
export const DEMO_SCRIPT: CallScript = {
  connect: 'auto',
  steps: [
    { say: 'Hello, Green Grocer, Sato speaking.' },
    { ask: 'The shop asks which delivery date suits you. What should I offer?' },
    { say: 'Tuesday works for us.' },
    { ask: 'They also ask whether to leave the parcel at the back door. What should I say?' },
    { say: 'Thank you, goodbye.' },
    { end: 'completed', say: 'The call ended; the other party agreed.' },
  ],
};
