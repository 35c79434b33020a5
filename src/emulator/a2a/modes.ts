import { z } from 'zod';
import { DEFAULT_SSE_STYLE, type SseStyle } from './sse-writer.js';

/**
 * Behaviours the call API document leaves open, switchable so that the
 * client is tested against each reasonable server and not only against one
 * reading (issue 15). Every field's default is the emulator's original
 * behaviour.
 */
export interface A2aModes {
  /**
   * After an answer the task keeps showing the answered question (same
   * message id) for this many reads: the answer's own reply, each
   * tasks/resubscribe, each tasks/get. The document does not show the state
   * right after an answer; public A2A processes answers asynchronously. 0:
   * the task moves on at once.
   */
  lagAfterAnswerReads: number;
  /**
   * tasks/resubscribe of a task that has ended: `replay` its last state
   * (default); `terminal-state`: refused with -32602 "Task … is in terminal
   * state" and no text code, as public A2A servers answer;
   * `session_not_active`: refused with the document's code.
   */
  endedResubscribe: 'replay' | 'terminal-state' | 'session_not_active';
  /**
   * An answer or a cancel for a task that has ended: `document`:
   * session_not_active; `public-a2a`: -32602 "terminal state" to an answer and
   * -32002 TaskNotCancelable to a cancel, without a text code.
   */
  endedErrors: 'document' | 'public-a2a';
  /** tasks/get (A2A 0.3): served, or answered -32601 method not found. */
  tasksGet: boolean;
  /** Errors to message/stream and tasks/resubscribe come as one SSE event on a 200 stream instead of a JSON body. */
  errorsAsSse: boolean;
  /** The first event of a call start (the stream's first event, or message/send's reply) waits this long (emulator clock). */
  firstEventDelayMs: number;
  /** The first event of a call start waits until `releaseFirstEvents()`; the call is placed (and charged) at once. */
  holdFirstEvent: boolean;
  /** A stream of a call start begins with a status-update `submitted` instead of the Task. */
  startEvent: 'task' | 'status-update';
  /** Streams stay open after an event with `final: true`; only the client closes them. */
  keepOpenAfterFinal: boolean;
  /** Answers refused with call_not_started this many times, even at input-required (Infinity: always). */
  answersNotStarted: number;
  /**
   * Answers to a live task refused with a bare JSON-RPC -32602 (invalid params, no text code) this many times
   * (Infinity: always), as a public A2A server may for a message it does not like: not proof the call ended.
   */
  answersInvalidParams: number;
  /** Status messages carry a stable `messageId` (default) or none. */
  messageIds: 'stable' | 'absent';
  /**
   * message/send (call start or answer) replies only once the task next
   * pauses (a question, an end), as A2A's blocking send does; default: at once.
   */
  blockingSend: boolean;
  /**
   * What tasks/resubscribe gives: the events the client missed, else a
   * snapshot (`replay`, default); or only events from now on (`live-only`,
   * as public A2A servers tap the task's queue), refused with -32001 while
   * the task waits at a question.
   */
  resubscribeReplay: 'replay' | 'live-only';
  /** tasks/cancel answers the canceled Task (A30, default) or a bare `null` result. */
  cancelReply: 'task' | 'null';
}

export const DEFAULT_MODES: A2aModes = {
  lagAfterAnswerReads: 0,
  endedResubscribe: 'replay',
  endedErrors: 'document',
  tasksGet: true,
  errorsAsSse: false,
  firstEventDelayMs: 0,
  holdFirstEvent: false,
  startEvent: 'task',
  keepOpenAfterFinal: false,
  answersNotStarted: 0,
  answersInvalidParams: 0,
  messageIds: 'stable',
  blockingSend: false,
  resubscribeReplay: 'replay',
  cancelReply: 'task',
};

/** A named server behaviour: modes and SSE style together. */
export interface ModePreset {
  modes?: Partial<A2aModes>;
  sse?: Partial<SseStyle>;
  /** What a server in this mode does, for `--help` and test names. */
  about: string;
}

/**
 * The behaviours of issue 15 by name, for `dataset-connector emulator
 * --a2a-mode <name>` and the client's table of modes × scenarios.
 */
export const MODE_PRESETS = {
  document: { about: 'the reading of the document the emulator started with' },
  'lag-after-answer': {
    modes: { lagAfterAnswerReads: 2 },
    about: 'after an answer, the next two reads still show the answered question (same message id)',
  },
  'lag-without-message-ids': {
    modes: { lagAfterAnswerReads: 2, messageIds: 'absent' },
    about: 'as lag-after-answer, and messages carry no messageId (a question is known by its text and position)',
  },
  'refused-resubscribe': {
    modes: { endedResubscribe: 'terminal-state', endedErrors: 'public-a2a' },
    about: 'an ended task cannot be resubscribed (-32602 terminal state) nor canceled (-32002); tasks/get tells its state',
  },
  'refused-resubscribe-no-get': {
    modes: { endedResubscribe: 'terminal-state', endedErrors: 'public-a2a', tasksGet: false },
    about: 'as refused-resubscribe, and tasks/get is not served (-32601)',
  },
  'session-not-active-resubscribe': {
    modes: { endedResubscribe: 'session_not_active' },
    about: 'resubscribing to an ended task answers session_not_active',
  },
  'errors-as-sse': {
    modes: { errorsAsSse: true, endedResubscribe: 'session_not_active' },
    about: 'errors to streaming requests come as an SSE event on a 200 stream',
  },
  'blocking-send': {
    modes: { blockingSend: true, resubscribeReplay: 'live-only', endedResubscribe: 'terminal-state', endedErrors: 'public-a2a', cancelReply: 'null' },
    about: 'message/send replies when the task next pauses; resubscribe gives live events only (-32001 at a question); cancel answers null',
  },
  'late-first-event': {
    modes: { firstEventDelayMs: 300 },
    about: 'the first event of a call start comes 300 ms after the call is placed',
  },
  'final-without-close': {
    modes: { keepOpenAfterFinal: true },
    about: 'streams stay open after the event marked final: true',
  },
  'wrapped-events': {
    sse: { wrapped: true, eventNames: true },
    about: 'events as {"task": …} / {"statusUpdate": …} with SSE event names (A28)',
  },
  'status-update-first': {
    modes: { startEvent: 'status-update', messageIds: 'absent' },
    about: 'a call start stream begins with a status-update, and messages carry no messageId',
  },
  'noisy-sse': {
    sse: { lineEnding: '\r\n', comments: true, multiLineData: true, retryField: true, eventIds: true, dataHeartbeats: true, chunkBytes: 5 },
    about: 'CRLF, keep-alive comments, heartbeat events (data: ping), multi-line data, retry and id fields, 5-byte chunks',
  },
} as const satisfies Record<string, ModePreset>;

export type ModePresetName = keyof typeof MODE_PRESETS;

/** True when `name` names a preset. */
export function isModePreset(name: string): name is ModePresetName {
  return Object.hasOwn(MODE_PRESETS, name);
}

/** Modes and SSE style of presets applied in order over the defaults. */
export function presetSettings(names: readonly ModePresetName[]): { modes: A2aModes; sse: SseStyle } {
  const modes: A2aModes = { ...DEFAULT_MODES };
  const sse: SseStyle = { ...DEFAULT_SSE_STYLE };
  for (const name of names) {
    const p: ModePreset = MODE_PRESETS[name];
    Object.assign(modes, p.modes ?? {});
    Object.assign(sse, p.sse ?? {});
  }
  return { modes, sse };
}

/** The body of `POST …/__emulator/modes`: snake_case fields, any subset; `presets` first, then the fields. */
export const modesRequestSchema = z
  .strictObject({
    presets: z.array(z.string().refine(isModePreset, 'unknown preset')).optional(),
    lag_after_answer_reads: z.int().min(0).optional(),
    ended_resubscribe: z.enum(['replay', 'terminal-state', 'session_not_active']).optional(),
    ended_errors: z.enum(['document', 'public-a2a']).optional(),
    tasks_get: z.boolean().optional(),
    errors_as_sse: z.boolean().optional(),
    first_event_delay_ms: z.number().min(0).optional(),
    hold_first_event: z.boolean().optional(),
    start_event: z.enum(['task', 'status-update']).optional(),
    keep_open_after_final: z.boolean().optional(),
    answers_not_started: z.union([z.int().min(0), z.literal('always')]).optional(),
    answers_invalid_params: z.union([z.int().min(0), z.literal('always')]).optional(),
    message_ids: z.enum(['stable', 'absent']).optional(),
    blocking_send: z.boolean().optional(),
    resubscribe_replay: z.enum(['replay', 'live-only']).optional(),
    cancel_reply: z.enum(['task', 'null']).optional(),
  });
export type ModesRequest = z.infer<typeof modesRequestSchema>;

/** Read a modes request into modes and style (presets reset to the defaults first). */
export function applyModesRequest(current: { modes: A2aModes; sse: SseStyle }, req: ModesRequest): { modes: A2aModes; sse: SseStyle } {
  const base = req.presets ? presetSettings(req.presets as ModePresetName[]) : { modes: { ...current.modes }, sse: { ...current.sse } };
  const m = base.modes;
  if (req.lag_after_answer_reads !== undefined) m.lagAfterAnswerReads = req.lag_after_answer_reads;
  if (req.ended_resubscribe !== undefined) m.endedResubscribe = req.ended_resubscribe;
  if (req.ended_errors !== undefined) m.endedErrors = req.ended_errors;
  if (req.tasks_get !== undefined) m.tasksGet = req.tasks_get;
  if (req.errors_as_sse !== undefined) m.errorsAsSse = req.errors_as_sse;
  if (req.first_event_delay_ms !== undefined) m.firstEventDelayMs = req.first_event_delay_ms;
  if (req.hold_first_event !== undefined) m.holdFirstEvent = req.hold_first_event;
  if (req.start_event !== undefined) m.startEvent = req.start_event;
  if (req.keep_open_after_final !== undefined) m.keepOpenAfterFinal = req.keep_open_after_final;
  if (req.answers_not_started !== undefined) m.answersNotStarted = req.answers_not_started === 'always' ? Infinity : req.answers_not_started;
  if (req.answers_invalid_params !== undefined) m.answersInvalidParams = req.answers_invalid_params === 'always' ? Infinity : req.answers_invalid_params;
  if (req.message_ids !== undefined) m.messageIds = req.message_ids;
  if (req.blocking_send !== undefined) m.blockingSend = req.blocking_send;
  if (req.resubscribe_replay !== undefined) m.resubscribeReplay = req.resubscribe_replay;
  if (req.cancel_reply !== undefined) m.cancelReply = req.cancel_reply;
  return base;
}

/** Modes as JSON (Infinity as "always"). */
export function modesView(modes: A2aModes): Record<string, unknown> {
  const count = (n: number) => (Number.isFinite(n) ? n : 'always');
  return { ...modes, answersNotStarted: count(modes.answersNotStarted), answersInvalidParams: count(modes.answersInvalidParams) };
}
