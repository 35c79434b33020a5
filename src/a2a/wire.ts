import { z } from 'zod';

/**
 * Wire schemas of the agent-to-agent call API, all in one place so that
 * correcting an assumption (A26–A30, explained in docs/contract.md) against the real service is a one-file
 * change. Reading is tolerant: unknown fields are ignored, and the alternative
 * spellings A28 lists are accepted.
 */

/** Task states of the document; the last three are terminal. */
export const DOCUMENT_TASK_STATES = ['submitted', 'working', 'input-required', 'completed', 'failed', 'canceled'] as const;

/*
 * Wire note A27-states (beside A26–A30 of docs/contract.md, not one of them): the
 * document lists six states, A2A 0.3 has three more, and a careful client
 * must not hang or misreport on them:
 * - `rejected`: the agent refused the task. Terminal; the call is reported as
 *   refused (not placed, when it came before `working`).
 * - `auth-required`: A2A's second interrupted state. The connector has no
 *   in-band way to give an authorisation, so it is terminal for us: the
 *   operator must fix the A2A key or its connected agent in the portal. The
 *   conversation cancels the task (best effort) so a call is not left open,
 *   and nothing is retried.
 * - `unknown`, and any state this client does not know (a newer protocol),
 *   read as `unknown`: not terminal. A stream that ends there is reopened a
 *   bounded number of times (tasks/resubscribe, never a new call start); if
 *   the task is still `unknown` the outcome is `unknown`: the call may or may
 *   not have happened, and it is not placed again.
 * Spellings of other A2A bindings (`TASK_STATE_REJECTED`, `auth_required`)
 * are accepted too.
 */
/*
 * Wire note A30-get (beside A26–A30; issue 15): where the document is silent
 * the client also reads what public A2A 0.3 servers do:
 * - `tasks/get` with `params: {"id": taskId}` answers the Task. It is asked
 *   only when a task's stream cannot be reopened; -32601 (method not found)
 *   or any failure means "not available".
 * - Without a text code (A29), -32602 ("Task … is in terminal state") to a
 *   resubscribe or an answer, and -32002 (TaskNotCancelable) to a cancel, mean
 *   the task has ended (errors.ts, refusedAsEnded).
 * - `tasks/cancel` may answer without a Task (`null`): the cancel was taken;
 *   tasks/get tells whether the call has ended.
 * - message/send may answer only when the task next pauses (A2A's blocking
 *   send), and a resubscribe may give only events from then on; the answer's
 *   reply is therefore read as an observation of the task.
 */
/** Every state the client reads: the document's six plus A2A 0.3's `rejected`, `auth-required`, `unknown` (A27-states). */
export const TASK_STATES = [...DOCUMENT_TASK_STATES, 'rejected', 'auth-required', 'unknown'] as const;
export type TaskState = (typeof TASK_STATES)[number];
/** States that end the call for the connector (A27-states adds `rejected` and `auth-required`). */
export type TerminalState = 'completed' | 'failed' | 'canceled' | 'rejected' | 'auth-required';

/** True for `completed`, `failed`, `canceled`, `rejected`, `auth-required` (A27-states). */
export function isTerminal(state: TaskState): state is TerminalState {
  return state === 'completed' || state === 'failed' || state === 'canceled' || state === 'rejected' || state === 'auth-required';
}

/** A27-states: a state as sent, read tolerantly; anything unrecognised is `unknown`. */
export function readTaskState(raw: string): TaskState {
  const s = raw.trim().toLowerCase().replace(/^task_state_/, '').replace(/_/g, '-');
  const known: readonly string[] = TASK_STATES;
  if (known.includes(s)) return s as TaskState;
  return s === 'cancelled' ? 'canceled' : 'unknown';
}

/** The error codes the document names, carried in `error.data.code` (A29). */
export const DOCUMENT_ERROR_CODES = [
  'to_required',
  'task_not_found',
  'session_principal_mismatch',
  'session_not_active',
  'call_not_started',
  'assistant_role_required',
  'assistant_text_required',
] as const;
export type DocumentErrorCode = (typeof DOCUMENT_ERROR_CODES)[number];

/** A29: the JSON-RPC number the service uses for each text code (informative only; match on the text). */
export const RPC_NUMBER_OF: Record<DocumentErrorCode, number> = {
  to_required: -32602,
  assistant_role_required: -32602,
  assistant_text_required: -32602,
  task_not_found: -32001,
  session_not_active: -32002,
  call_not_started: -32002,
  session_principal_mismatch: -32003,
};

/** A27: a text part; `kind` may be missing in lenient senders. */
const partSchema = z.object({ kind: z.string().optional(), text: z.string().optional() });

/** A27: a message as it arrives inside a status. */
export const wireMessageSchema = z.object({
  kind: z.string().optional(),
  // A status message without a role is still the agent speaking; dropping the whole event would lose a question.
  role: z.string().default('agent'),
  parts: z.array(partSchema).default([]),
  messageId: z.string().optional(),
  taskId: z.string().optional(),
});
export type WireMessage = z.infer<typeof wireMessageSchema>;

/** A27: `status` of a task or a status update. */
const statusSchema = z.object({
  state: z.string().transform(readTaskState),
  message: wireMessageSchema.nullish(),
  timestamp: z.string().optional(),
});

/** A27: a Task. */
export const wireTaskSchema = z.object({
  kind: z.literal('task').optional(),
  id: z.string().min(1),
  contextId: z.string().optional(),
  status: statusSchema,
});

/** A28: a status update event. */
export const wireStatusUpdateSchema = z.object({
  kind: z.literal('status-update').optional(),
  taskId: z.string().min(1),
  contextId: z.string().optional(),
  status: statusSchema,
  final: z.boolean().optional(),
});

/** A26: the JSON-RPC error object; `data.code` carries the document's code (A29). */
const rpcErrorSchema = z.object({
  code: z.number(),
  message: z.string().optional(),
  data: z.unknown().optional(),
});

/** A26: a JSON-RPC response, result or error. */
export const rpcResponseSchema = z.object({
  jsonrpc: z.string().optional(),
  id: z.union([z.string(), z.number(), z.null()]).optional(),
  result: z.unknown().optional(),
  error: rpcErrorSchema.optional(),
});
export type RpcResponse = z.infer<typeof rpcResponseSchema>;

/** The Agent Card: only `capabilities.streaming` is documented; the rest is read when present. */
export const agentCardSchema = z.object({
  name: z.string().optional(),
  description: z.string().optional(),
  url: z.string().optional(),
  version: z.string().optional(),
  protocolVersion: z.string().optional(),
  capabilities: z.object({ streaming: z.boolean().optional() }).default({}),
});
export type AgentCard = z.infer<typeof agentCardSchema>;

/** A message reduced to what the connector uses. */
export interface CallMessage {
  role: string;
  text: string;
  /** A27: what identifies a question across reads, when the service sends it. */
  messageId?: string;
}

/** One observation of a task: the result of a send, or one stream event, normalised. */
export interface TaskEvent {
  kind: 'task' | 'status-update';
  taskId: string;
  contextId?: string;
  state: TaskState;
  message: CallMessage | null;
  /** True when the stream ends after this event (input-required or terminal). */
  final: boolean;
}

/** The text of a message: its text parts joined with newlines. */
export function messageText(m: WireMessage): string {
  return m.parts
    .filter((p) => (p.kind === undefined || p.kind === 'text') && typeof p.text === 'string')
    .map((p) => p.text)
    .join('\n');
}

function toMessage(m: WireMessage | null | undefined): CallMessage | null {
  if (!m) return null;
  return { role: m.role, text: messageText(m), ...(m.messageId ? { messageId: m.messageId } : {}) };
}

/** The stream closes after this state: input-required, or one that ends the call (`unknown` does not, A27-states). */
function endsStream(state: TaskState): boolean {
  return state === 'input-required' || isTerminal(state);
}

/**
 * Read a `result` (or one SSE event's result) as a task event. `hint` is the
 * SSE `event:` name when there was one (A28). Undefined when it is neither a
 * Task nor a status update (for example a bare Message).
 */
export function parseTaskEvent(result: unknown, hint?: string): TaskEvent | undefined {
  let value = result;
  // A28: wrapped forms {"task": …} / {"statusUpdate": …}.
  if (isObject(value) && isObject(value.task) && value.status === undefined) {
    value = value.task;
    hint = 'task';
  } else if (isObject(value) && isObject(value.statusUpdate) && value.status === undefined) {
    value = value.statusUpdate;
    hint = 'statusUpdate';
  }
  if (!isObject(value)) return undefined;
  const looksLikeUpdate =
    value.kind === 'status-update' ||
    (value.kind === undefined &&
      (hint === 'statusUpdate' || (hint !== 'task' && 'taskId' in value && !('id' in value))));
  if (looksLikeUpdate) {
    const u = wireStatusUpdateSchema.safeParse(value);
    if (!u.success) return undefined;
    const state = u.data.status.state;
    return {
      kind: 'status-update',
      taskId: u.data.taskId,
      ...(u.data.contextId === undefined ? {} : { contextId: u.data.contextId }),
      state,
      message: toMessage(u.data.status.message),
      // A question or an end stops the reading even when a server marks it `final: false`: the document
      // says the stream ends there, and waiting on would leave the question unanswered. A server's
      // `final: true` on another state (e.g. `unknown`) is honoured.
      final: u.data.final === true || endsStream(state),
    };
  }
  const t = wireTaskSchema.safeParse(value);
  if (!t.success) return undefined;
  const state = t.data.status.state;
  return {
    kind: 'task',
    taskId: t.data.id,
    ...(t.data.contextId === undefined ? {} : { contextId: t.data.contextId }),
    state,
    message: toMessage(t.data.status.message),
    final: endsStream(state),
  };
}

/** A29: the text code of an error, from `error.data.code` (or `data` itself when it is a string). */
export function errorTextCode(data: unknown): string | undefined {
  if (typeof data === 'string' && data.length > 0) return data;
  if (isObject(data) && typeof data.code === 'string' && data.code.length > 0) return data.code;
  return undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
