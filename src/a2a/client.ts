import { randomUUID } from 'node:crypto';
import { systemClock, type Clock } from '../clock.js';
import type { Secret } from '../secret.js';
import { isE164 } from './e164.js';
import { A2aError } from './errors.js';
import { Transport } from './transport.js';
import { DEFAULT_WAITS, Patience, type WaitPolicy } from './waits.js';
import { agentCardSchema, parseTaskEvent, type AgentCard, type TaskEvent } from './wire.js';

export interface A2aClientOptions {
  /** `{base_url}` of the document: the JSON-RPC endpoint; the Agent Card is below it. */
  baseUrl: string;
  /** A2A key or account key, sent as `Authorization: Bearer` on every request. */
  key: Secret;
  clock?: Clock;
  /** Wait for the answer of a plain request. Default 30 s. */
  requestTimeoutMs?: number;
  connectTimeoutMs?: number;
  /** A stream with no byte (not even a keep-alive) for this long is broken. Default 5 min. */
  streamIdleTimeoutMs?: number;
  /**
   * Wait for the answer of `message/send` (call start or answer). Default 5 min: a
   * server may answer only once the task next pauses (A2A's blocking send).
   */
  messageTimeoutMs?: number;
  /** `call_not_started` to an answer: the waits before sending it again. */
  answerRetry?: Partial<WaitPolicy>;
}

/** A call to place: the number (E.164) and what the service's agent should achieve. */
export interface CallRequest {
  to: string;
  goal: string;
}

/** A spoken answer into a running call. */
export interface AnswerRequest {
  taskId: string;
  text: string;
}

/** How an answer went: delivered, or the call had already ended (`session_not_active`). */
export type AnswerOutcome =
  | { delivered: true; attempts: number; task: TaskEvent | null }
  | { delivered: false; attempts: number; reason: 'session_not_active' };

/**
 * Client of the agent-to-agent call API. A call start and an answer are
 * separate typed methods: an answer always carries a task id, role `agent` and
 * text (the three conditions of the dispatch table), so it can never be taken
 * for a new call. Call starts are never retried.
 */
export class A2aClient {
  readonly #transport: Transport;
  readonly #clock: Clock;
  readonly #waits: WaitPolicy;
  readonly #messageTimeoutMs: number;

  constructor(opts: A2aClientOptions) {
    this.#transport = new Transport({
      baseUrl: opts.baseUrl,
      key: opts.key,
      requestTimeoutMs: opts.requestTimeoutMs ?? 30_000,
      connectTimeoutMs: opts.connectTimeoutMs ?? 10_000,
      streamIdleTimeoutMs: opts.streamIdleTimeoutMs ?? 300_000,
    });
    this.#clock = opts.clock ?? systemClock;
    this.#waits = { ...DEFAULT_WAITS, ...opts.answerRetry };
    this.#messageTimeoutMs = opts.messageTimeoutMs ?? 300_000;
  }

  /** The clock this client waits on (its answer retries; runCall's pauses before reopening a task). */
  get clock(): Clock {
    return this.#clock;
  }

  /** GET `/.well-known/agent-card.json` with the key. */
  async fetchAgentCard(signal?: AbortSignal): Promise<AgentCard> {
    const json = await this.#transport.getJson('/.well-known/agent-card.json', signal);
    const card = agentCardSchema.safeParse(json);
    if (!card.success) throw new A2aError('BAD_RESPONSE', 'the Agent Card is not an object', { cause: card.error });
    return card.data;
  }

  /** `message/send` call start: returns the task (state `submitted`). Places a real call; never retried. */
  async startCall(call: CallRequest, signal?: AbortSignal): Promise<TaskEvent> {
    const result = await this.#transport.call('message/send', { message: callStartMessage(call) }, {
      callStart: true,
      timeoutMs: this.#messageTimeoutMs,
      ...(signal ? { signal } : {}),
    });
    const task = parseTaskEvent(result);
    if (!task) throw new A2aError('OUTCOME_UNKNOWN', 'the call start was answered without a task; the call may have been placed');
    return task;
  }

  /** `message/stream` call start: the task event, then what happens in the call, until it asks or ends. */
  async *streamCall(call: CallRequest, signal?: AbortSignal): AsyncGenerator<TaskEvent> {
    const params = { message: callStartMessage(call) };
    yield* this.#transport.stream('message/stream', params, { callStart: true, ...(signal ? { signal } : {}) });
  }

  /** `tasks/resubscribe` (A30): reopen the stream of a task, e.g. after answering at input-required. */
  async *resubscribe(taskId: string, signal?: AbortSignal): AsyncGenerator<TaskEvent> {
    requireTaskId(taskId);
    yield* this.#transport.stream('tasks/resubscribe', { id: taskId }, { callStart: false, taskId, ...(signal ? { signal } : {}) });
  }

  /**
   * `tasks/cancel` (A30): end the call; returns the task (A30: in state
   * `canceled`), or null when the service accepted the cancel without
   * answering a Task (some answer `null` or an empty result): asked, not
   * shown ended.
   */
  async cancel(taskId: string, signal?: AbortSignal): Promise<TaskEvent | null> {
    requireTaskId(taskId);
    const result = await this.#transport.call('tasks/cancel', { id: taskId }, { callStart: false, taskId, ...(signal ? { signal } : {}) });
    return parseTaskEvent(result) ?? null;
  }

  /**
   * `tasks/get` of A2A 0.3 (`params: {id}`), which the document does not name:
   * how a task stands when its stream cannot be reopened. Servers without it
   * answer -32601, which the conversation reads as "not available".
   */
  async getTask(taskId: string, signal?: AbortSignal): Promise<TaskEvent> {
    requireTaskId(taskId);
    const result = await this.#transport.call('tasks/get', { id: taskId }, { callStart: false, taskId, ...(signal ? { signal } : {}) });
    const task = parseTaskEvent(result);
    if (!task) throw new A2aError('BAD_RESPONSE', 'tasks/get did not answer a task', { taskId });
    return task;
  }

  /** One `message/send` answer, no retry. Throws the service's code (`call_not_started`, …) as it comes. */
  async sendAnswer(answer: AnswerRequest, signal?: AbortSignal, messageId: string = randomUUID()): Promise<TaskEvent | null> {
    const message = answerMessage(answer, messageId);
    const result = await this.#transport.call('message/send', { message }, {
      callStart: false,
      taskId: answer.taskId,
      timeoutMs: this.#messageTimeoutMs,
      ...(signal ? { signal } : {}),
    });
    return parseTaskEvent(result) ?? null;
  }

  /**
   * Send an answer the way the document asks: `call_not_started` is not a
   * failure, so wait (growing waits on the client's clock) and send the same
   * message again until the patience runs out (CALL_NOT_CONNECTED; the
   * caller cancels the task then); `session_not_active` means the call is
   * over and ends the exchange cleanly.
   */
  async answer(answer: AnswerRequest, signal?: AbortSignal, policy: Partial<WaitPolicy> = {}): Promise<AnswerOutcome> {
    const messageId = randomUUID(); // the same message each attempt
    const patience = new Patience({ ...this.#waits, ...policy }, this.#clock.now());
    for (let attempt = 1; ; attempt++) {
      try {
        const task = await this.sendAnswer(answer, signal, messageId);
        return { delivered: true, attempts: attempt, task };
      } catch (err) {
        if (err instanceof A2aError && err.code === 'session_not_active') {
          return { delivered: false, attempts: attempt, reason: 'session_not_active' };
        }
        if (!(err instanceof A2aError && err.code === 'call_not_started')) throw err;
        const wait = patience.nextWait(this.#clock.now());
        if (wait === undefined) {
          throw new A2aError('CALL_NOT_CONNECTED', `the call did not connect within ${patience.describe()} (${attempt} attempts to answer)`, {
            cause: err,
            taskId: answer.taskId,
          });
        }
        await this.#clock.sleep(wait, signal);
      }
    }
  }

  async close(): Promise<void> {
    await this.#transport.close();
  }
}

/** The message of a call start (dispatch row: no taskId, role `user`, `metadata.to`). */
function callStartMessage(call: CallRequest): Record<string, unknown> {
  if (!isE164(call.to)) throw new A2aError('INVALID_NUMBER', 'the number to call must be E.164, like +81312345678');
  if (call.goal.trim() === '') throw new A2aError('GOAL_REQUIRED', 'a call needs a goal');
  return {
    kind: 'message',
    role: 'user',
    parts: [{ kind: 'text', text: call.goal }],
    messageId: randomUUID(),
    metadata: { to: call.to },
  };
}

/** The message of an answer (dispatch row: taskId, role `agent`, non-empty text). */
function answerMessage(answer: AnswerRequest, messageId: string): Record<string, unknown> {
  requireTaskId(answer.taskId);
  if (answer.text.trim() === '') throw new A2aError('ANSWER_INVALID', 'an answer needs non-empty text', { taskId: answer.taskId });
  return {
    kind: 'message',
    role: 'agent',
    parts: [{ kind: 'text', text: answer.text }],
    messageId,
    taskId: answer.taskId,
  };
}

function requireTaskId(taskId: string): void {
  if (typeof taskId !== 'string' || taskId.trim() === '') throw new A2aError('ANSWER_INVALID', 'a task id is required');
}
