import type { Clock } from '../clock.js';
import { ConnectorError, hasCode } from '../errors.js';
import type { A2aClient, CallRequest } from './client.js';
import { A2aError, RPC_NUMBERS, refusedAsEnded } from './errors.js';
import { AnsweredQuestions, type Seen } from './questions.js';
import { DEFAULT_WAITS, Patience, type WaitPolicy } from './waits.js';
import type { CallOutcome, EndedBy, OutcomeState } from './call-outcome.js';
import { isTerminal, type TaskEvent, type TerminalState } from './wire.js';

export type { CallOutcome, EndedBy, OutcomeState } from './call-outcome.js';

/** Gives the answer to the agent's question, or null when nobody can answer. `signal` aborts on an interrupt. */
export type Answerer = (question: string, ctx: { taskId: string; signal?: AbortSignal }) => Promise<string | null>;

export interface RunCallOptions {
  answer: Answerer;
  /** Every task event as it arrives, for printing or logging. */
  onEvent?: (event: TaskEvent) => void;
  /** Each answer once it was accepted. */
  onAnswer?: (text: string, ctx: { taskId: string }) => void;
  /**
   * An interrupt (Ctrl-C, a stopping daemon): the call is canceled. Before
   * the service has given the task id, the call start is read for
   * `interruptGraceMs` more, so that a call it placed can still be canceled;
   * after that its outcome is unknown.
   */
  signal?: AbortSignal;
  /** Default 3 s. */
  interruptGraceMs?: number;
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
  /**
   * How long the service may keep the call waiting without progress
   * (`call_not_started` to an answer, an answered question still shown, a
   * task that cannot be reopened), and the growing waits in between. When
   * the patience runs out the task is canceled. Default 5 min, waits 1 s to 15 s.
   */
  waits?: Partial<WaitPolicy>;
  /** For every wait; default the client's clock. */
  clock?: Clock;
  /** Start with `message/stream` (default) or, when the Agent Card says no streaming, `message/send` then resubscribe. */
  stream?: boolean;
}

/**
 * Place one call and follow it to the end: print what happens, answer each
 * question once (then follow the task again, A30), reconnect a broken stream
 * of a known task, learn how an ended task ended when its stream cannot be
 * reopened. The call start itself is sent once, whatever happens. Throws only
 * when no call was placed (refused, invalid, not sent); from the moment a call
 * may exist every end is an outcome, and a call the connector stops following
 * is canceled first.
 */
export function runCall(client: A2aClient, call: CallRequest, opts: RunCallOptions): Promise<CallOutcome> {
  return new CallRun(client, call, opts).run();
}

/** What to do next: read a source of events, decide on the last event, or stop with an outcome. */
type Step = { outcome: CallOutcome } | { source: AsyncIterable<TaskEvent>; stream: boolean } | { decide: true };

/** Errors of the connection rather than of the service: reopen the task. */
const CONNECTION_CODES = ['STREAM_INTERRUPTED', 'NETWORK_ERROR', 'TIMEOUT'];

/** The service will not let this key follow the task at all. */
const FORBIDDEN_CODES = ['UNAUTHORIZED', 'session_principal_mismatch'];

/** Sends of a cancel refused with call_not_started before it is reported as failed. */
const CANCEL_ATTEMPTS = 3;

class CallRun {
  readonly #client: A2aClient;
  readonly #call: CallRequest;
  readonly #opts: RunCallOptions;
  readonly #clock: Clock;
  readonly #waits: WaitPolicy;
  readonly #patience: Patience;
  readonly #questions = new AnsweredQuestions();
  /** Aborts the requests in flight: at once on an interrupt once the task id is known, else after the grace. */
  readonly #http = new AbortController();
  readonly #graceTimer = new AbortController();
  #taskId: string | undefined;
  #last: TaskEvent | undefined;
  #lastSeen: Seen = 'other';
  #lastFromStream = false;
  #answers = 0;
  #reconnects = 0;
  #endedBy: EndedBy = 'call';

  constructor(client: A2aClient, call: CallRequest, opts: RunCallOptions) {
    this.#client = client;
    this.#call = call;
    this.#opts = opts;
    this.#clock = opts.clock ?? client.clock;
    this.#waits = { ...DEFAULT_WAITS, ...opts.waits };
    this.#patience = new Patience(this.#waits, this.#clock.now());
  }

  get #interrupted(): boolean {
    return this.#opts.signal?.aborted === true;
  }

  async run(): Promise<CallOutcome> {
    const signal = this.#opts.signal;
    signal?.throwIfAborted(); // nothing sent yet
    const onInterrupt = () => this.#onInterrupt();
    signal?.addEventListener('abort', onInterrupt, { once: true });
    try {
      return await this.#loop();
    } finally {
      signal?.removeEventListener('abort', onInterrupt);
      this.#graceTimer.abort();
      this.#http.abort();
    }
  }

  async #loop(): Promise<CallOutcome> {
    let step: Step = { source: this.#start(), stream: this.#opts.stream !== false };
    let failure: unknown;
    for (;;) {
      if ('outcome' in step && failure === undefined) return step.outcome;
      // An interrupt is acted on between steps; a read in flight learns of it through #http.
      if (this.#interrupted) return this.#interrupt();
      const recovering = failure !== undefined;
      try {
        if (failure !== undefined) {
          const err = failure;
          failure = undefined;
          step = await this.#recover(err);
        } else if ('source' in step) {
          step = await this.#read(step.source, step.stream);
        } else {
          step = await this.#decide();
        }
      } catch (err) {
        if (this.#interrupted) return this.#interrupt();
        if (!this.#taskId) {
          // A27/A28: a call start whose answer was lost may have placed a call; it is never sent again.
          if (hasCode(err, 'OUTCOME_UNKNOWN')) return this.#outcome('unknown', { ended: false, endedBy: 'lost', code: 'OUTCOME_UNKNOWN', taskId: undefined });
          throw err; // refused, invalid or not sent: no call was placed
        }
        if (recovering) return this.#giveUp('lost', err);
        failure = err;
      }
    }
  }

  /** The call start: the stream of `message/stream`, or the one reply of `message/send`. */
  #start(): AsyncIterable<TaskEvent> {
    if (this.#opts.stream !== false) return this.#client.streamCall(this.#call, this.#http.signal);
    const client = this.#client;
    const call = this.#call;
    const signal = this.#http.signal;
    return (async function* () {
      yield await client.startCall(call, signal);
    })();
  }

  #resubscribe(): Step {
    return { source: this.#client.resubscribe(this.#taskId!, this.#http.signal), stream: true };
  }

  /** Read events until the source ends (a stream stops at its final event, rule 5). */
  async #read(source: AsyncIterable<TaskEvent>, stream: boolean): Promise<Step> {
    this.#lastFromStream = stream;
    for await (const ev of source) {
      this.#observe(ev);
      // Interrupted before the task id was known, and here it is: stop reading and cancel it.
      if (this.#interrupted) return this.#interrupt().then((outcome) => ({ outcome }));
    }
    return { decide: true };
  }

  #observe(ev: TaskEvent): void {
    const moved = !sameEvent(this.#last, ev);
    this.#taskId = ev.taskId;
    this.#lastSeen = this.#questions.see(ev);
    this.#last = ev;
    if (moved && this.#lastSeen !== 'repeat') {
      this.#patience.reset(this.#clock.now());
      this.#reconnects = 0;
    }
    this.#opts.onEvent?.(ev);
  }

  /** The source ended normally: act on the last event. */
  async #decide(): Promise<Step> {
    const ev = this.#last;
    if (!ev) throw new A2aError('BAD_RESPONSE', 'the call ended without a task');
    if (isTerminal(ev.state)) return { outcome: await this.#ended(ev, ev.state) };
    if (ev.state === 'input-required') {
      // Rule 1: the question just answered, still shown: the service has not moved on yet.
      if (this.#lastSeen === 'repeat') return this.#waitThen(() => this.#resubscribe());
      return this.#answerQuestion(ev);
    }
    if (ev.state === 'unknown') return this.#unknownState();
    // A reply (the call start's, an answer's) shows the task live: follow its stream. A stream that said
    // final on a live state is reopened after a wait, never in a tight loop.
    return this.#lastFromStream ? this.#waitThen(() => this.#resubscribe()) : this.#resubscribe();
  }

  /**
   * A27-states: the stream closed in `unknown`: reopen it a bounded number of
   * times after a growing pause; then the outcome is `unknown` (the call may or
   * may not have happened, and it is not placed again).
   */
  async #unknownState(): Promise<Step> {
    const max = this.#opts.maxReconnects ?? 3;
    if (this.#reconnects >= max) return { outcome: this.#outcome('unknown', { ended: false }) };
    await this.#sleep(Math.max(0, this.#opts.unknownBackoffMs ?? 500) * 2 ** this.#reconnects);
    this.#reconnects++;
    return this.#resubscribe();
  }

  /** Wait (growing, on the clock) and go on; when the patience has run out, cancel the call instead (rule 3). */
  async #waitThen(next: () => Step): Promise<Step> {
    const wait = this.#patience.nextWait(this.#clock.now());
    if (wait === undefined) return { outcome: await this.#giveUp('patience') };
    await this.#sleep(wait);
    return next();
  }

  async #answerQuestion(ev: TaskEvent): Promise<Step> {
    const taskId = ev.taskId;
    const text = await this.#ask(ev);
    if (text === null || text.trim() === '') return { outcome: await this.#giveUp('no_answer') };
    this.#questions.answered(ev);
    this.#patience.reset(this.#clock.now());
    let reply: TaskEvent | null;
    try {
      const sent = await this.#client.answer({ taskId, text }, this.#http.signal, this.#waits);
      // session_not_active: the call is over; how it ended is learned like any refusal as ended.
      if (!sent.delivered) return this.#learn(new A2aError('session_not_active', 'the call had ended before the answer', { taskId }));
      reply = sent.task;
    } catch (err) {
      if (this.#interrupted) throw err;
      if (hasCode(err, 'CALL_NOT_CONNECTED')) return { outcome: await this.#giveUp('patience', err) };
      if (refusedAsEnded(err)) return this.#learn(err);
      // The answer may or may not have been spoken (its reply was lost): never sent again; see how the task goes on.
      if (hasCode(err, ...CONNECTION_CODES)) return this.#resubscribe();
      return { outcome: await this.#giveUp('lost', err) };
    }
    this.#answers++;
    this.#opts.onAnswer?.(text, { taskId });
    if (!reply) return this.#resubscribe();
    // The reply shows the task after the answer: still the question (lagging), a new question, the end, or live.
    this.#observe(reply);
    this.#lastFromStream = false;
    return { decide: true };
  }

  /** Ask the answerer; an interrupt does not wait for a person still typing. */
  async #ask(ev: TaskEvent): Promise<string | null> {
    const signal = this.#opts.signal;
    const asking = this.#opts.answer(ev.message?.text ?? '', { taskId: ev.taskId, ...(signal ? { signal } : {}) });
    if (!signal) return asking;
    return new Promise<string | null>((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      if (signal.aborted) onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      asking.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  /** Following the task failed with `err` (the task id is known). */
  async #recover(err: unknown): Promise<Step> {
    if (!(err instanceof A2aError)) return { outcome: await this.#giveUp('lost', err) };
    if (CONNECTION_CODES.includes(err.code)) {
      const max = this.#opts.maxReconnects ?? 3;
      if (this.#reconnects < max) {
        // A broken connection is reopened at once, then after growing waits; a task left `unknown` after its own pause.
        const wait =
          this.#last?.state === 'unknown'
            ? Math.max(0, this.#opts.unknownBackoffMs ?? 500) * 2 ** this.#reconnects
            : this.#reconnects === 0
              ? 0
              : this.#waits.firstWaitMs * 2 ** (this.#reconnects - 1);
        if (wait > 0) await this.#sleep(wait);
        this.#reconnects++;
        return this.#resubscribe();
      }
      // A27-states: the service itself cannot say; that is the outcome, not a broken connection.
      if (this.#last?.state === 'unknown') return { outcome: this.#outcome('unknown', { ended: false }) };
      return { outcome: await this.#giveUp('lost', err) };
    }
    // The document: call_not_started is not a failure; wait for the turn.
    if (err.code === 'call_not_started') return this.#waitThen(() => this.#resubscribe());
    if (FORBIDDEN_CODES.includes(err.code)) return { outcome: await this.#giveUp('lost', err) };
    // Rule 2: the service refused to reopen the task.
    return this.#learn(err);
  }

  /**
   * The service refused a request about the task (reopening it, an answer):
   * learn how it stands from `tasks/get` where the server has it. Ended: the
   * outcome, with its state, or "ended, outcome unknown" when the refusal said
   * ended and nothing tells how; never reported as refused, never retried.
   */
  async #learn(refusal: A2aError): Promise<Step> {
    const got = await this.#get();
    if (got) {
      this.#observe(got);
      this.#lastFromStream = false;
      if (isTerminal(got.state)) return { outcome: await this.#ended(got, got.state, 'tasks/get') };
      if (got.state === 'input-required') return { decide: true };
      // Live, but its stream cannot be reopened now: wait, then try again (a poll through tasks/get while refusals go on).
      return this.#waitThen(() => this.#resubscribe());
    }
    // A bare -32602 is also what public A2A servers say for any message they dislike: it does not prove the call
    // ended, so the call is canceled (a cancel of an ended task is refused, and that refusal then says so).
    if (refusedAsEnded(refusal) && refusal.rpcCode !== RPC_NUMBERS.invalidParams) return { outcome: this.#outcome('unknown', { ended: true, code: refusal.code }) };
    return { outcome: await this.#giveUp('lost', refusal) };
  }

  /** `tasks/get`, or undefined when the server has no such method (-32601) or it fails: "not available". */
  async #get(): Promise<TaskEvent | undefined> {
    try {
      return await this.#client.getTask(this.#taskId!, this.#http.signal);
    } catch (err) {
      if (this.#interrupted) throw err;
      return undefined;
    }
  }

  /**
   * A terminal state. `auth-required` (A27-states) is interrupted, not ended,
   * at the service: the task is canceled so the call is not left open waiting
   * for an authorisation nobody will give; a failure to cancel changes nothing.
   */
  async #ended(ev: TaskEvent, state: TerminalState, learnedBy?: 'tasks/get'): Promise<CallOutcome> {
    const extra = learnedBy ? { learnedBy } : {};
    if (state === 'auth-required') {
      const canceled = await this.#client.cancel(ev.taskId).then(
        () => 'done' as const,
        () => 'failed' as const,
      );
      return this.#outcome('auth-required', { ended: true, cancel: canceled, reason: ev.message?.text, ...extra });
    }
    return this.#outcome(state, { ended: true, reason: ev.message?.text, ...extra });
  }

  #interrupt(): Promise<CallOutcome> {
    const last = this.#last;
    if (last && isTerminal(last.state)) return this.#ended(last, last.state);
    if (!this.#taskId) {
      // The service never said which task: a call may be ringing that nobody can cancel from here.
      return Promise.resolve(this.#outcome('unknown', { ended: false, endedBy: 'interrupt', code: 'OUTCOME_UNKNOWN', taskId: undefined }));
    }
    return this.#giveUp('interrupt');
  }

  /** The connector ends the call: cancel it explicitly (A30) and say how that went. */
  async #giveUp(endedBy: EndedBy, err?: unknown): Promise<CallOutcome> {
    this.#endedBy = endedBy;
    const code = err === undefined ? undefined : err instanceof ConnectorError ? err.code : 'INTERNAL';
    const withCode = code ? { code } : {};
    for (let attempt = 1; ; attempt++) {
      try {
        // No signal: a cancel must go out even after an interrupt (the transport's timeout bounds it).
        // A cancel accepted without a Task in reply: tasks/get says whether the call has ended.
        const canceled = (await this.#client.cancel(this.#taskId!)) ?? (await this.#client.getTask(this.#taskId!).catch(() => null));
        if (canceled) this.#observe(canceled);
        if (canceled && isTerminal(canceled.state)) return this.#outcome(canceled.state, { ended: true, cancel: 'done', ...withCode });
        return this.#outcome('unknown', { ended: false, cancel: 'requested', ...withCode });
      } catch (cancelErr) {
        if (refusedAsEnded(cancelErr)) {
          // It had ended by itself: that is the outcome.
          this.#endedBy = 'call';
          const got = await this.#client.getTask(this.#taskId!).catch(() => undefined);
          if (got) this.#observe(got);
          if (got && isTerminal(got.state)) return this.#outcome(got.state, { ended: true, cancel: 'already_ended', learnedBy: 'tasks/get' });
          return this.#outcome('unknown', { ended: true, cancel: 'already_ended' });
        }
        if (hasCode(cancelErr, 'call_not_started') && attempt < CANCEL_ATTEMPTS) {
          await this.#clock.sleep(this.#waits.firstWaitMs * 2 ** (attempt - 1));
          continue;
        }
        const cancelCode = cancelErr instanceof ConnectorError ? cancelErr.code : 'INTERNAL';
        return this.#outcome('unknown', { ended: false, cancel: 'failed', code: code ?? cancelCode });
      }
    }
  }

  #outcome(
    state: OutcomeState,
    o: { ended: boolean; endedBy?: EndedBy; taskId?: string | undefined; reason?: string | undefined } & Pick<CallOutcome, 'learnedBy' | 'cancel' | 'code'>,
  ): CallOutcome {
    const reason = 'reason' in o ? o.reason : this.#last?.message?.text;
    return {
      taskId: 'taskId' in o ? o.taskId : this.#taskId,
      state,
      ended: o.ended,
      reason: reason || undefined,
      endedBy: o.endedBy ?? this.#endedBy,
      answers: this.#answers,
      ...(o.learnedBy ? { learnedBy: o.learnedBy } : {}),
      ...(o.cancel ? { cancel: o.cancel } : {}),
      ...(o.code ? { code: o.code } : {}),
    };
  }

  #onInterrupt(): void {
    const reason: unknown = this.#opts.signal?.reason;
    if (this.#taskId) {
      this.#http.abort(reason);
      return;
    }
    // Before the task id: read the call start a little longer, so a call it placed can still be canceled.
    this.#clock.sleep(this.#opts.interruptGraceMs ?? 3_000, this.#graceTimer.signal).then(
      () => this.#http.abort(reason),
      () => undefined,
    );
  }

  #sleep(ms: number): Promise<void> {
    return this.#clock.sleep(ms, this.#opts.signal);
  }
}

/** The same observation again: state, message id and text (a snapshot repeating what was seen). */
function sameEvent(a: TaskEvent | undefined, b: TaskEvent): boolean {
  return a !== undefined && a.state === b.state && a.message?.messageId === b.message?.messageId && (a.message?.text ?? '') === (b.message?.text ?? '');
}
