import { hasCode } from '../errors.js';
import type { A2aClient, CallRequest } from './client.js';
import { A2aError } from './errors.js';
import { isTerminal, type TaskEvent, type TerminalState } from './wire.js';

/** Gives the answer to the agent's question, or null when nobody can answer. */
export type Answerer = (question: string, ctx: { taskId: string }) => Promise<string | null>;

export interface RunCallOptions {
  answer: Answerer;
  /** Every task event as it arrives, for printing or logging. */
  onEvent?: (event: TaskEvent) => void;
  /** Each answer once it was accepted. */
  onAnswer?: (text: string, ctx: { taskId: string }) => void;
  signal?: AbortSignal;
  /** Resubscribes after a broken stream of a known task (never a new call start). Default 3. */
  maxReconnects?: number;
  /** Start with `message/stream` (default) or, when the Agent Card says no streaming, `message/send` then resubscribe. */
  stream?: boolean;
}

/** How a call ended. */
export interface CallOutcome {
  taskId: string;
  state: TerminalState;
  /** Text of the last status message (for `failed`, the reason). */
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
  let taskId: string | undefined;
  let last: TaskEvent | undefined;
  let events: AsyncGenerator<TaskEvent>;
  if (opts.stream === false) {
    last = await client.startCall(call, opts.signal);
    taskId = last.taskId;
    emit(last);
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
      if (hasCode(err, 'STREAM_INTERRUPTED') && taskId && reconnects < maxReconnects) {
        reconnects++;
        events = client.resubscribe(taskId, opts.signal);
        continue;
      }
      throw err;
    }
    if (!last || !taskId) throw new A2aError('BAD_RESPONSE', 'the call ended without a task');
    if (isTerminal(last.state)) {
      return { taskId, state: last.state, reason: last.message?.text || undefined, endedBy, answers };
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
