import { systemClock, type Clock } from '../../clock.js';
import { DEFAULT_MODES, presetSettings, type A2aModes, type ModePresetName } from './modes.js';
import { scriptFor, type ScriptBook } from './script.js';
import { DEFAULT_SSE_STYLE, type SseStyle } from './sse-writer.js';
import { connectTask, EmuTask, runScript, type EmuState } from './tasks.js';

/** A key the emulator accepts, and the account its tasks belong to. */
export interface A2aEmulatorKey {
  key: string;
  account: string;
}

export interface A2aEmulatorOptions {
  /** Accepted keys (A2A or account keys alike): a list, or a map key → account. */
  keys: A2aEmulatorKey[] | Record<string, string>;
  /** Scripts by number called (`default` for others); a demo script otherwise. */
  scripts?: ScriptBook;
  /** Clock of the script delays. */
  clock?: Clock;
  /** Delay before each script step without its own `afterMs`. Default 0. */
  stepDelayMs?: number;
  /** After an answer, the script waits for a resubscribe at most this long. Default 2000. */
  resumeAfterMs?: number;
  /** Server behaviours the document leaves open (issue 15); presets first, then these fields. */
  modes?: Partial<A2aModes>;
  /** Named behaviours (`lag-after-answer`, …), applied over the defaults before `modes`. */
  presets?: ModePresetName[];
}

/** One call start: one call placed, one credit spent. */
export interface CallRecord {
  taskId: string;
  account: string;
  to: string;
  goal: string;
  via: 'message/send' | 'message/stream';
}

/** One request as the emulator saw it. */
export interface RequestRecord {
  httpMethod: string;
  path: string;
  rpcMethod?: string;
  account?: string;
  /** The `params.message` of message/send and message/stream, as sent. */
  message?: unknown;
  /** The document's error code answered, if any. */
  errorCode?: string;
  status: number;
}

/** State and in-process controls of the A2A emulator. */
export class A2aEmulator {
  readonly tasks = new Map<string, EmuTask>();
  readonly calls: CallRecord[] = [];
  readonly requests: RequestRecord[] = [];
  /** How streams are written; change it to exercise the client's reader. */
  sse: SseStyle = { ...DEFAULT_SSE_STYLE };
  /** How the server behaves where the document is silent; change it between calls. */
  modes: A2aModes = { ...DEFAULT_MODES };
  scripts: ScriptBook;
  readonly clock: Clock;
  readonly stepDelayMs: number;
  readonly resumeAfterMs: number;
  readonly #keys = new Map<string, string>();
  #breakNextStream: number | undefined;
  #dropNextStart = false;
  readonly #running = new Set<Promise<void>>();
  #releaseFirst: (() => void) | undefined;
  #firstGate: Promise<void> | undefined;

  constructor(opts: A2aEmulatorOptions) {
    const keys = Array.isArray(opts.keys) ? opts.keys : Object.entries(opts.keys).map(([key, account]) => ({ key, account }));
    for (const k of keys) this.#keys.set(k.key, k.account);
    this.scripts = opts.scripts ?? {};
    this.clock = opts.clock ?? systemClock;
    this.stepDelayMs = opts.stepDelayMs ?? 0;
    this.resumeAfterMs = opts.resumeAfterMs ?? 2_000;
    if (opts.presets) {
      const p = presetSettings(opts.presets);
      this.modes = p.modes;
      this.sse = p.sse;
    }
    Object.assign(this.modes, opts.modes ?? {});
  }

  /** Switch to these presets (over the defaults) and mode fields, e.g. between the rows of a test table. */
  useModes(presets: ModePresetName[], modes: Partial<A2aModes> = {}): void {
    const p = presetSettings(presets);
    this.modes = { ...p.modes, ...modes };
    this.sse = p.sse;
  }

  /** Let the first events held by `holdFirstEvent` go out (and later ones pass at once until held again). */
  releaseFirstEvents(): void {
    this.#releaseFirst?.();
    this.#releaseFirst = undefined;
    this.#firstGate = undefined;
  }

  /** @internal what a call start's first event waits for: the hold, then the delay (modes). */
  firstEventGate(): Promise<void> | undefined {
    const waits: Promise<void>[] = [];
    if (this.modes.holdFirstEvent) {
      this.#firstGate ??= new Promise<void>((resolve) => (this.#releaseFirst = resolve));
      waits.push(this.#firstGate);
    }
    const delayMs = this.modes.firstEventDelayMs;
    if (waits.length === 0 && delayMs <= 0) return undefined;
    return Promise.all(waits).then(() => (delayMs > 0 ? this.clock.sleep(delayMs) : undefined));
  }

  /** Credits spent: one per call start, whatever became of the call. */
  get credits(): number {
    return this.calls.length;
  }

  creditsOf(account: string): number {
    return this.calls.filter((c) => c.account === account).length;
  }

  addKey(key: string, account: string): void {
    this.#keys.set(key, account);
  }

  /** Revocation takes effect immediately (document, "Authentication"). */
  revokeKey(key: string): void {
    this.#keys.delete(key);
  }

  /** The account of an `Authorization: Bearer …` header, or undefined. */
  accountOf(authorization: string | undefined): string | undefined {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    return m ? this.#keys.get(m[1]!) : undefined;
  }

  task(taskId: string): EmuTask | undefined {
    return this.tasks.get(taskId);
  }

  /** Connect a call whose script says `connect: 'never'`. */
  connect(taskId: string): void {
    const t = this.tasks.get(taskId);
    if (t) connectTask(t);
  }

  /** End a call from the other side (`rejected`: the service refuses it, A27-states). */
  hangUp(taskId: string, state: 'completed' | 'failed' | 'canceled' | 'rejected' = 'completed', text?: string): void {
    const t = this.tasks.get(taskId);
    if (t && !t.terminal) t.transition(state, text === undefined ? null : { role: 'agent', text });
  }

  /** The next stream breaks (socket destroyed) after this many events. */
  breakNextStream(afterEvents: number): void {
    this.#breakNextStream = afterEvents;
  }

  /** The next call start is placed (and charged) but its HTTP answer is lost. */
  dropNextCallStartAnswer(): void {
    this.#dropNextStart = true;
  }

  /** Resolves when the task reaches `state` (or already is in it). */
  async waitForState(taskId: string, state: EmuState, timeoutMs = 5_000): Promise<EmuTask> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const t = this.tasks.get(taskId);
      if (t?.state === state) return t;
      if (Date.now() > deadline) throw new Error(`task ${taskId} did not reach ${state} (is ${t?.state ?? 'unknown'})`);
      await new Promise((r) => setTimeout(r, 2));
    }
  }

  /** Wait for every running script (for a clean close); held first events are let go. */
  async idle(): Promise<void> {
    this.releaseFirstEvents();
    await Promise.all([...this.#running]);
  }

  /** @internal used by the server: take the one-shot stream break. */
  takeStreamBreak(): number | undefined {
    const n = this.#breakNextStream;
    this.#breakNextStream = undefined;
    return n;
  }

  /** @internal used by the server: take the one-shot dropped call-start answer. */
  takeDropStart(): boolean {
    const d = this.#dropNextStart;
    this.#dropNextStart = false;
    return d;
  }

  /** @internal a call start: charge, record, run the script. `beforeRun` attaches a stream first. */
  startCall(account: string, to: string, goal: string, via: CallRecord['via'], beforeRun?: (t: EmuTask) => void): EmuTask {
    const task = new EmuTask(account, to, goal, scriptFor(this.scripts, to), () => this.modes);
    const connect = task.script.connect;
    if (typeof connect === 'object' && 'reject' in connect) {
      // A27-states: refused at once; the first event already says so (still a call start, still charged).
      task.state = 'rejected';
      task.message = { role: 'agent', text: connect.reject, messageId: `msg-${task.id}-reject` };
    }
    this.tasks.set(task.id, task);
    this.calls.push({ taskId: task.id, account, to, goal, via });
    beforeRun?.(task);
    task.accepted();
    const run = runScript(task, this.clock, this.stepDelayMs, this.resumeAfterMs).finally(() => this.#running.delete(run));
    this.#running.add(run);
    return task;
  }

  /** @internal an answer accepted by the dispatch table into a connected call; returns the Task its reply shows. */
  answer(task: EmuTask, text: string): Record<string, unknown> {
    task.answers.push(text);
    // Answering shows the client saw everything so far; resubscribe replays only what follows.
    task.delivered = task.events.length;
    task.answered();
    const hangUp = task.hangUpOnAnswer;
    if (task.state === 'input-required') {
      task.state = 'working';
      task.message = null;
      task.wake();
    }
    const reply = task.read().view;
    // The other party hangs up at once: the reply (taken before) shows the call live, the task has ended.
    if (hangUp) task.transition(hangUp.end, hangUp.say === undefined ? null : { role: 'agent', text: hangUp.say });
    return reply;
  }

  /** @internal tasks/cancel on a running task. */
  cancel(task: EmuTask): void {
    task.transition('canceled', null);
    task.delivered = task.events.length; // the cancel answer carries the canceled Task
  }
}
