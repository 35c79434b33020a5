import type { Clock } from '../clock.js';
import { hasCode } from '../errors.js';
import type { A2aClient, CallRequest } from './client.js';
import { A2aError } from './errors.js';
import { isTerminal, type TaskEvent, type TerminalState } from './wire.js';

/** How a call ended as far as the connector can tell: a terminal state, or `unknown` (A27-states). */
export type OutcomeState = TerminalState | 'unknown';

/** Gives the answer to the agent's question, or null when nobody can answer. */
export type Answerer = (question: string, ctx: { taskId: string }) => Promise<string | null>;

export interface RunCallOptions {
  answer: Answerer;
  /** Every task event as it arrives, for printing or logging. */
  onEvent?: (event: TaskEvent) => void;
  /** Each answer once it was accepted. */
  onAnswer?: (text: string, ctx: { taskId: string }) => void;
  signal?: AbortSignal;
  /**
   * Resubscribes after a broken stream of a known task, or after one that ended
   * in `unknown` (never a new call start). Default 3.
   */
  maxReconnects?: number;
  /**
   * Wait before reopening a task whose stream closed in a state that neither
   * ends the call nor asks (`unknown`), doubled each time: the service needs
   * a moment to learn more, and back-to-back resubscribes would report
   * `unknown` within milliseconds. Default 500 ms (then 1 s, 2 s).
   */
  unknownBackoffMs?: number;
  /** For that wait; default the client's clock. */
  clock?: Clock;
  /** Start with `message/stream` (default) or, when the Agent Card says no streaming, `message/send` then resubscribe. */
  stream?: boolean;
}

/** How a call ended. */
export interface CallOutcome {
  taskId: string;
  /**
   * `rejected`: the service refused the call; `auth-required`: the key lacks an
   * authorisation the service wants (the task was canceled, best effort);
   * `unknown`: still unknown after the resubscribes, the call may have happened (A27-states).
   */
  state: OutcomeState;
  /** Text of the last status message (for `failed` and `rejected`, the reason). */
  reason: string | undefined;
  /** `no_answer`: the agent asked, nobody could answer, so the call was canceled. */
  endedBy: 'call' | 'no_answer';
  answers: number;
}

/**
 * Place one call and follow it to the end: print what happens, answer each
 * question at input-required (then resubscribe, A30), reconnect a broken stream
 * of a known task. The call start itself is sent once, whatever happens.
 */
export async function runCall(client: A2aClient, call: CallRequest, opts: RunCallOptions): Promise<CallOutcome> {
  const emit = opts.onEvent ?? (() => undefined);
  const maxReconnects = opts.maxReconnects ?? 3;
  const unknownBackoffMs = Math.max(0, opts.unknownBackoffMs ?? 500);
  const clock = opts.clock ?? client.clock;
  let taskId: string | undefined;
  let last: TaskEvent | undefined;
  let events: AsyncGenerator<TaskEvent>;
  if (opts.stream === false) {
    last = await client.startCall(call, opts.signal);
    taskId = last.taskId;
    emit(last);
    // A27-states: a start answered `rejected` or `auth-required` has nothing to follow.
    if (isTerminal(last.state)) return ended(client, last, last.state, 'call', 0, opts.signal);
    events = client.resubscribe(taskId, opts.signal);
  } else {
    events = client.streamCall(call, opts.signal);
  }
  let reconnects = 0;
  let answers = 0;
  let endedBy: CallOutcome['endedBy'] = 'call';
  for (;;) {
    try {
      for await (const ev of events) {
        taskId = ev.taskId;
        last = ev;
        emit(ev);
      }
    } catch (err) {
      if (hasCode(err, 'STREAM_INTERRUPTED') && taskId) {
        if (reconnects < maxReconnects) {
          // A broken connection is reopened at once; a task the service left `unknown` after a pause.
          if (last?.state === 'unknown') await clock.sleep(unknownBackoffMs * 2 ** reconnects, opts.signal);
          reconnects++;
          events = client.resubscribe(taskId, opts.signal);
          continue;
        }
        // A27-states: the service itself cannot say; that is the outcome, not a broken connection.
        if (last?.state === 'unknown') return { taskId, state: 'unknown', reason: last.message?.text || undefined, endedBy, answers };
      }
      throw err;
    }
    if (!last || !taskId) throw new A2aError('BAD_RESPONSE', 'the call ended without a task');
    if (isTerminal(last.state)) return ended(client, last, last.state, endedBy, answers, opts.signal);
    if (last.state !== 'input-required') {
      // The stream closed as final on a state that neither ends the call nor asks (`unknown`, A27-states):
      // ask again, bounded, after a growing pause on the injected clock.
      if (reconnects < maxReconnects) {
        await clock.sleep(unknownBackoffMs * 2 ** reconnects, opts.signal);
        reconnects++;
        events = client.resubscribe(taskId, opts.signal);
        continue;
      }
      if (last.state === 'unknown') return { taskId, state: 'unknown', reason: last.message?.text || undefined, endedBy, answers };
      throw new A2aError('STREAM_INTERRUPTED', `the stream of task ${taskId} kept closing in state ${last.state}`, { taskId });
    }
    // input-required: the stream closed normally; answer, then reopen the task.
    reconnects = 0;
    const text = await opts.answer(last.message?.text ?? '', { taskId });
    if (text === null || text.trim() === '') {
      if (endedBy === 'no_answer') throw new A2aError('BAD_RESPONSE', `task ${taskId} still asks after it was canceled`, { taskId });
      endedBy = 'no_answer';
      try {
        const canceled = await client.cancel(taskId, opts.signal);
        emit(canceled);
        if (isTerminal(canceled.state)) {
          return { taskId, state: canceled.state, reason: canceled.message?.text || undefined, endedBy, answers };
        }
      } catch (err) {
        if (!hasCode(err, 'session_not_active')) throw err;
      }
      events = client.resubscribe(taskId, opts.signal);
      continue;
    }
    const sent = await client.answer({ taskId, text }, opts.signal);
    if (sent.delivered) {
      answers++;
      opts.onAnswer?.(text, { taskId });
    }
    // session_not_active: the call is over; the resubscribe tells how it ended.
    events = client.resubscribe(taskId, opts.signal);
  }
}

/**
 * The outcome of a task in a terminal state. `auth-required` (A27-states) is
 * interrupted, not ended, at the service: the task is canceled so the call is
 * not left open waiting for an authorisation nobody will give; a failure to
 * cancel (the same key may not be allowed to) changes nothing.
 */
async function ended(
  client: A2aClient,
  last: TaskEvent,
  state: TerminalState,
  endedBy: CallOutcome['endedBy'],
  answers: number,
  signal: AbortSignal | undefined,
): Promise<CallOutcome> {
  if (state === 'auth-required') {
    await client.cancel(last.taskId, signal).catch((err: unknown) => {
      if (signal?.aborted) throw err;
    });
  }
  return { taskId: last.taskId, state, reason: last.message?.text || undefined, endedBy, answers };
}
