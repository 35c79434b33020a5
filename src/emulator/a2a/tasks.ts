import { randomUUID } from 'node:crypto';
import type { Clock } from '../../clock.js';
import { DEFAULT_MODES, type A2aModes } from './modes.js';
import type { TaskEventRecord } from './sse-writer.js';
import type { CallScript } from './script.js';

/**
 * Task states (document, "States and transitions"), plus the A2A 0.3 states
 * the document does not list (A27-states): `rejected` (terminal),
 * `auth-required` (interrupted: streams close, the task waits to be canceled)
 * and `unknown`.
 */
export type EmuState = 'submitted' | 'working' | 'input-required' | 'completed' | 'failed' | 'canceled' | 'rejected' | 'auth-required' | 'unknown';

const TERMINAL = new Set<EmuState>(['completed', 'failed', 'canceled', 'rejected']);

/** Someone reading a task's stream. */
export interface Subscriber {
  write(ev: TaskEventRecord): void;
  end(): void;
}

/** A status message: the text spoken or asked, with the id it keeps on every read. */
export interface EmuMessage {
  role: string;
  text: string;
  messageId: string;
}

/** A call placed on the emulator. */
export class EmuTask {
  readonly id = `task-${randomUUID()}`;
  readonly contextId = `ctx-${randomUUID()}`;
  state: EmuState = 'submitted';
  message: EmuMessage | null = null;
  readonly events: TaskEventRecord[] = [];
  /** Highest seq written to any stream: resubscribe replays what came after it. */
  delivered = 0;
  readonly subscribers = new Set<Subscriber>();
  /** Answers spoken into the call, in order. */
  readonly answers: string[] = [];
  /** Set by a script's `hold` step: the task stays `unknown` and every stream of it closes (A27-states). */
  stuck = false;
  /** Set while a script's `ask` step with `hangUp` waits: the call ends as soon as it is answered. */
  hangUpOnAnswer: { end: 'completed' | 'canceled'; say?: string } | undefined;
  /** The Task as it was when it last asked (input-required): what a lagging read shows. */
  #questionView: Record<string, unknown> | undefined;
  /** Reads left that still show the answered question (mode lagAfterAnswerReads). */
  #lagReads = 0;
  #wake: (() => void) | undefined;
  #onSubscribe: (() => void) | undefined;

  constructor(
    readonly account: string,
    readonly to: string,
    readonly goal: string,
    readonly script: CallScript,
    /** The emulator's modes, read when they matter (tests switch them between calls). */
    readonly modes: () => A2aModes = () => DEFAULT_MODES,
  ) {}

  get terminal(): boolean {
    return TERMINAL.has(this.state);
  }

  /** Streams close in this state: a question, an authorisation wanted, the end, or a task stuck `unknown`. */
  get closesStreams(): boolean {
    return this.state === 'input-required' || this.state === 'auth-required' || this.terminal || (this.state === 'unknown' && this.stuck);
  }

  /** A27: the Task as the wire shows it. */
  toWire(): Record<string, unknown> {
    return { kind: 'task', id: this.id, contextId: this.contextId, status: this.#status() };
  }

  /**
   * The Task as one read shows it (an answer's reply, a resubscribe's
   * snapshot, tasks/get): the answered question while the lag lasts, else
   * the task as it is.
   */
  read(): { view: Record<string, unknown>; stale: boolean } {
    if (this.#lagReads > 0 && this.#questionView) {
      this.#lagReads--;
      return { view: this.#questionView, stale: true };
    }
    return { view: this.toWire(), stale: false };
  }

  /** An answer was taken: reads keep showing the question for the mode's number of reads. */
  answered(): void {
    this.#lagReads = this.modes().lagAfterAnswerReads;
  }

  /** Record the first event (`task`, submitted; or already `rejected` when the start was refused). */
  accepted(): void {
    if (this.modes().startEvent === 'status-update') {
      // Some servers open a call start's stream with a status update, never sending the Task itself.
      this.#push('statusUpdate', this.#update(this.closesStreams), this.closesStreams);
    } else {
      this.#push('task', this.toWire(), this.closesStreams);
    }
  }

  /** Move to `state` with an optional message and tell every stream (A28). */
  transition(state: EmuState, message: { role: string; text: string } | null): void {
    this.state = state;
    this.message = message ? { ...message, messageId: `msg-${randomUUID()}` } : null;
    const final = state === 'input-required' || state === 'auth-required' || TERMINAL.has(state);
    if (state === 'input-required') this.#questionView = this.toWire();
    this.#push('statusUpdate', this.#update(final), final);
    if (TERMINAL.has(state)) {
      this.wake();
      this.#onSubscribe?.();
    }
  }

  /** Attach a stream; returns the events it missed (or a snapshot), and whether it must close at once. */
  attach(sub: Subscriber): { backlog: TaskEventRecord[]; closeNow: boolean } {
    const lagging = this.read();
    if (lagging.stale) {
      // Still showing the answered question: a snapshot of it, and the stream closes as at any question.
      return { backlog: [{ seq: this.delivered, name: 'task', result: lagging.view, final: true }], closeNow: true };
    }
    const missed = this.events.filter((e) => e.seq > this.delivered);
    const closeNow = this.closesStreams;
    const snapshot = { seq: this.delivered, name: 'task' as const, result: this.toWire(), final: closeNow };
    const backlog = missed.length > 0 ? missed : [snapshot];
    if (missed.length > 0) this.delivered = missed[missed.length - 1]!.seq;
    if (!closeNow) {
      this.subscribers.add(sub);
      this.#subscribed();
    }
    return { backlog, closeNow };
  }

  /** Attach a stream that gets only what happens from now on (mode resubscribeReplay `live-only`). */
  attachLive(sub: Subscriber): void {
    this.subscribers.add(sub);
    this.#subscribed();
  }

  /**
   * Resolves when the task next pauses (a question, an end, auth-required) or
   * at once when it is paused: what a blocking message/send waits for. The
   * waiter counts as a reader, so a script waiting for the client goes on.
   */
  untilPaused(): Promise<void> {
    if (this.closesStreams) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const waiter: Subscriber = { write: () => undefined, end: resolve };
      this.attachLive(waiter);
    });
  }

  #subscribed(): void {
    const waiting = this.#onSubscribe;
    this.#onSubscribe = undefined;
    waiting?.();
  }

  /** Resolves when a stream attaches (resubscribe), or after `maxMs`, whichever is first. */
  async waitForSubscriber(clock: Clock, maxMs: number): Promise<void> {
    if (this.subscribers.size > 0) return;
    const timer = new AbortController();
    const attached = new Promise<void>((resolve) => {
      this.#onSubscribe = resolve;
    });
    await Promise.race([attached, clock.sleep(maxMs, timer.signal).catch(() => undefined)]);
    this.#onSubscribe = undefined;
    timer.abort();
  }

  /** Wait until `wake()` (an answer, a connect, a cancel). */
  waitForWake(): Promise<void> {
    return new Promise((resolve) => {
      this.#wake = resolve;
    });
  }

  wake(): void {
    const w = this.#wake;
    this.#wake = undefined;
    w?.();
  }

  /** Close every open stream without a final event (a task stuck `unknown`, A27-states). */
  closeStreams(): void {
    for (const sub of this.subscribers) sub.end();
    this.subscribers.clear();
  }

  #update(final: boolean): Record<string, unknown> {
    return { kind: 'status-update', taskId: this.id, contextId: this.contextId, status: this.#status(), final };
  }

  #status(): Record<string, unknown> {
    const status: Record<string, unknown> = { state: this.state, timestamp: new Date().toISOString() };
    if (this.message) {
      status.message = {
        kind: 'message',
        role: this.message.role,
        parts: [{ kind: 'text', text: this.message.text }],
        // A27: the id a message keeps on every read (or none, mode messageIds).
        ...(this.modes().messageIds === 'stable' ? { messageId: this.message.messageId } : {}),
        taskId: this.id,
        contextId: this.contextId,
      };
    }
    return status;
  }

  #push(name: TaskEventRecord['name'], result: Record<string, unknown>, final: boolean): void {
    const ev: TaskEventRecord = { seq: this.events.length + 1, name, result, final };
    this.events.push(ev);
    if (this.subscribers.size > 0) this.delivered = ev.seq;
    for (const sub of this.subscribers) sub.write(ev);
    if (final) {
      for (const sub of this.subscribers) sub.end();
      this.subscribers.clear();
    }
  }
}

/**
 * Play a task's script: connect (or fail to start, or wait to be connected),
 * then each step after its delay; after an answer, waits (at most
 * `resumeAfterMs`) for the client to resubscribe; stops early when the task ends from outside
 * (cancel).
 */
export async function runScript(task: EmuTask, clock: Clock, stepDelayMs: number, resumeAfterMs: number): Promise<void> {
  const script = task.script;
  const connect = script.connect ?? 'auto';
  if (task.terminal) return; // refused at the start (`reject`)
  if (connect === 'never') {
    await task.waitForWake();
  } else {
    await clock.sleep(script.connectAfterMs ?? stepDelayMs);
  }
  if (task.terminal || task.state !== 'submitted') return;
  if (typeof connect === 'object') {
    if ('fail' in connect) {
      task.transition('failed', { role: 'agent', text: connect.fail });
      return;
    }
    if ('authRequired' in connect) {
      await waitWhileAuthRequired(task, connect.authRequired);
      return;
    }
  }
  task.transition('working', null);
  for (const step of script.steps ?? []) {
    await clock.sleep(step.afterMs ?? stepDelayMs);
    if (task.terminal) return;
    if ('state' in step) {
      // A27-states: the A2A 0.3 states the document does not list.
      if (step.state === 'auth-required') {
        await waitWhileAuthRequired(task, step.say);
        return;
      }
      task.transition(step.state, step.say === undefined ? null : { role: 'agent', text: step.say });
      if (step.state === 'rejected') return;
      if (step.hold) {
        task.stuck = true;
        task.closeStreams();
        return;
      }
    } else if ('say' in step && !('end' in step)) {
      task.transition('working', { role: 'agent', text: step.say });
    } else if ('ask' in step) {
      task.hangUpOnAnswer = step.hangUp;
      task.transition('input-required', { role: 'agent', text: step.ask });
      while ((task.state as EmuState) === 'input-required') await task.waitForWake();
      task.hangUpOnAnswer = undefined;
      if (task.terminal) return;
      // Steps advance on events: after an answer the call goes on once the client has resubscribed (A30).
      await task.waitForSubscriber(clock, resumeAfterMs);
      if (task.terminal) return;
    } else if (step.end === 'failed') {
      task.transition('failed', { role: 'agent', text: step.reason });
      return;
    } else {
      task.transition(step.end, step.say === undefined ? null : { role: 'agent', text: step.say });
      return;
    }
  }
  if (!task.terminal) task.transition('completed', null);
}

/** `auth-required` (A27-states): the task waits for an authorisation that never comes here, until it is canceled or ended. */
async function waitWhileAuthRequired(task: EmuTask, text: string | undefined): Promise<void> {
  task.transition('auth-required', text === undefined ? null : { role: 'agent', text });
  while ((task.state as EmuState) === 'auth-required') await task.waitForWake();
}

/** Connect a task left ringing (`connect: 'never'`). */
export function connectTask(task: EmuTask): void {
  if (task.state === 'submitted') {
    task.wake();
  }
}
