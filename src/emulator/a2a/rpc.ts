import type { EmuTask } from './tasks.js';

/** The document's error codes with the JSON-RPC numbers of A29. */
export const ERRORS = {
  to_required: -32602,
  assistant_role_required: -32602,
  assistant_text_required: -32602,
  task_not_found: -32001,
  session_not_active: -32002,
  call_not_started: -32002,
  session_principal_mismatch: -32003,
} as const;
export type EmuErrorCode = keyof typeof ERRORS;

const MESSAGES: Record<EmuErrorCode, string> = {
  to_required: 'metadata.to is required to start a call',
  assistant_role_required: 'an answer must have role agent',
  assistant_text_required: 'an answer needs a non-empty text part',
  task_not_found: 'no such task',
  session_not_active: 'the task has ended',
  call_not_started: 'the call has not connected yet; send again later',
  session_principal_mismatch: 'the task belongs to another account',
};

/** A26/A29: a JSON-RPC error response carrying the text code in `error.data.code`. */
export function rpcError(id: unknown, code: EmuErrorCode): Record<string, unknown> {
  return { jsonrpc: '2.0', id: id ?? null, error: { code: ERRORS[code], message: MESSAGES[code], data: { code } } };
}

/** A JSON-RPC error of the protocol itself (parse error, unknown method, bad params), without a document code. */
export function protocolError(id: unknown, code: number, message: string): Record<string, unknown> {
  return { jsonrpc: '2.0', id: id ?? null, error: { code, message } };
}

/** A26: a JSON-RPC result response. */
export function rpcResult(id: unknown, result: unknown): Record<string, unknown> {
  return { jsonrpc: '2.0', id: id ?? null, result };
}

/** The parts of `params.message` the dispatch table looks at. */
export interface IncomingMessage {
  role: unknown;
  text: string;
  taskId: string;
  to: string | undefined;
}

/** Read `params.message` loosely; undefined when it is not a message at all. */
export function readMessage(params: unknown): IncomingMessage | undefined {
  const message = (params as { message?: unknown } | null)?.message;
  if (typeof message !== 'object' || message === null) return undefined;
  const m = message as Record<string, unknown>;
  if (!Array.isArray(m.parts)) return undefined;
  const text = m.parts
    .filter((p): p is { text: string } => typeof p === 'object' && p !== null && typeof (p as { text?: unknown }).text === 'string')
    .map((p) => p.text)
    .join('\n');
  const metadata = m.metadata as { to?: unknown } | undefined;
  const to = typeof metadata?.to === 'string' && metadata.to.trim() !== '' ? metadata.to : undefined;
  return { role: m.role, text, taskId: typeof m.taskId === 'string' ? m.taskId : '', to };
}

/** What `message/send` does with a message (document, "message/send dispatch"). */
export type Dispatch =
  | { kind: 'answer'; taskId: string; text: string }
  | { kind: 'start'; to: string; goal: string }
  | { kind: 'error'; code: EmuErrorCode };

/**
 * The dispatch table. An answer needs all three of: a non-empty taskId, role
 * `agent`, a non-empty text; anything else is a new message. A new message
 * that names a task but no number was meant as an answer, so it gets the
 * reason it is not one (assistant_role_required / assistant_text_required);
 * a new message with `metadata.to` starts a call, even when it carries a
 * taskId (the hazard the client's typed API prevents).
 */
export function dispatch(m: IncomingMessage): Dispatch {
  const hasText = m.text.trim() !== '';
  if (m.taskId !== '' && m.role === 'agent' && hasText) return { kind: 'answer', taskId: m.taskId, text: m.text };
  if (m.to !== undefined) return { kind: 'start', to: m.to, goal: m.text };
  if (m.taskId !== '') return { kind: 'error', code: m.role !== 'agent' ? 'assistant_role_required' : 'assistant_text_required' };
  return { kind: 'error', code: 'to_required' };
}

/** Who may touch a task and in which state it takes an answer. */
export function checkAnswer(task: EmuTask | undefined, account: string): EmuErrorCode | undefined {
  if (!task) return 'task_not_found';
  if (task.account !== account) return 'session_principal_mismatch';
  if (task.terminal) return 'session_not_active';
  if (task.state === 'submitted') return 'call_not_started';
  return undefined;
}

/** Ownership check for resubscribe and cancel. */
export function checkOwner(task: EmuTask | undefined, account: string): EmuErrorCode | undefined {
  if (!task) return 'task_not_found';
  if (task.account !== account) return 'session_principal_mismatch';
  return undefined;
}
