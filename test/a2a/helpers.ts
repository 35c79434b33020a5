import { request } from 'undici';
import { A2aClient, type A2aClientOptions } from '../../src/a2a/client.js';
import type { TaskEvent } from '../../src/a2a/wire.js';
import { systemClock, type Clock } from '../../src/clock.js';
import type { DatasetAlertStatus } from '../../src/alerts/alerts.js';
import { Secret } from '../../src/secret.js';
import type { ScriptBook } from '../../src/emulator/a2a/script.js';
import type { A2aEmulator, A2aEmulatorOptions } from '../../src/emulator/a2a/emulator.js';
import { startA2aEmulator, type RunningA2aEmulator } from '../../src/emulator/a2a/server.js';

export const ALICE_KEY = 'tba_live_alice_0123456789abcdef';
export const BOB_KEY = 'a2a_bob_0123456789abcdef';

/** Numbers with scripts used across the tests. */
export const N = {
  ask: '+81300000001',
  fail: '+81300000002',
  never: '+81300000003',
  plain: '+81300000004',
  twoAsks: '+81300000005',
  endFailed: '+81300000006',
  // A27-states: A2A 0.3 states the document does not list.
  reject: '+81300000007',
  authAtStart: '+81300000008',
  authMidCall: '+81300000009',
  unknownPasses: '+81300000010',
  unknownHeld: '+81300000011',
  rejectMidCall: '+81300000012',
  // Issue 15: a call that ends at once after its answer, and one asking the same text twice.
  endsAfterAnswer: '+81300000013',
  sameTwice: '+81300000014',
};

export const SCRIPTS: ScriptBook = {
  [N.ask]: {
    steps: [{ say: 'もしもし、佐藤です。' }, { ask: 'Which day should I offer?' }, { say: 'Tuesday is fine.' }, { end: 'completed', say: 'Agreed on Tuesday.' }],
  },
  [N.fail]: { connect: { fail: 'number unreachable' } },
  [N.never]: { connect: 'never', steps: [{ say: 'Hello, finally.' }, { ask: 'What do you need?' }, { say: 'Noted.' }] },
  [N.plain]: { steps: [{ say: 'Hello.' }, { say: 'Goodbye.' }] },
  [N.twoAsks]: { steps: [{ ask: 'First question?' }, { ask: 'Second question?' }, { say: 'Thanks.' }] },
  [N.endFailed]: { steps: [{ say: 'Hm.' }, { end: 'failed', reason: 'the other party hung up' }] },
  [N.reject]: { connect: { reject: 'number not allowed for this account' } },
  [N.authAtStart]: { connect: { authRequired: 'the connected agent needs a signed-in user' } },
  [N.authMidCall]: { steps: [{ say: 'Hello.' }, { state: 'auth-required', say: 'the order tool needs authorisation' }, { say: 'never said' }] },
  [N.unknownPasses]: { steps: [{ say: 'Hello.' }, { state: 'unknown', say: 'line noise' }, { say: 'Back again.' }, { end: 'completed', say: 'Done.' }] },
  [N.unknownHeld]: { steps: [{ say: 'Hello.' }, { state: 'unknown', hold: true }] },
  [N.rejectMidCall]: { steps: [{ say: 'Hello.' }, { state: 'rejected', say: 'the agent declined the goal' }] },
  // The other party hangs up as the answer is spoken: the task has ended before the client's resubscribe.
  [N.endsAfterAnswer]: { steps: [{ ask: 'Shall I confirm the order?', hangUp: { end: 'completed', say: 'Order confirmed.' } }] },
  [N.sameTwice]: { steps: [{ ask: 'Could you repeat that?' }, { say: 'Sorry, the line is bad.' }, { ask: 'Could you repeat that?' }, { say: 'Got it.' }] },
};

/** A minute in ms, for the call alerts' times. */
export const MIN = 60_000;
/** 2025-06-02 10:00 in Tokyo: inside the call alerts' allowed hours (08:00-20:00). */
export const T0 = Date.UTC(2025, 5, 2, 1, 0);

/** `dataset` held by a guard since 90 minutes before T0: past held_after_minutes 60, so a call alert is due. */
export function heldByGuard(dataset = 'shop-1'): DatasetAlertStatus {
  return { dataset, held: { kind: 'guard', reason: 'would delete 40% of records', since: T0 - 90 * MIN }, stopped: null };
}

export async function startEmu(scripts: ScriptBook = SCRIPTS, extra: Partial<A2aEmulatorOptions> = {}): Promise<RunningA2aEmulator> {
  return startA2aEmulator({ port: 0, keys: [{ key: ALICE_KEY, account: 'alice' }, { key: BOB_KEY, account: 'bob' }], scripts, ...extra });
}

export function clientFor(url: string, key = ALICE_KEY, extra: Partial<A2aClientOptions> = {}): A2aClient {
  return new A2aClient({ baseUrl: url, key: new Secret(key), ...extra });
}

/** A clock whose sleep returns at once, after running a hook (e.g. connecting the call). */
export function hookClock(onSleep: (ms: number) => void = () => undefined): Clock & { sleeps: number[] } {
  const sleeps: number[] = [];
  let now = 1_700_000_000_000;
  return {
    sleeps,
    after: systemClock.after,
    now: () => now,
    sleep: async (ms) => {
      sleeps.push(ms);
      now += ms;
      onSleep(ms);
    },
  };
}

/**
 * A clock whose sleeps wait until the test releases them (or their signal
 * aborts): for the grace after an interrupt, which must not pass before the
 * test has let the first event go.
 */
export function gatedClock(): Clock & { sleeps: number[]; release(): void } {
  const sleeps: number[] = [];
  const waiting = new Set<() => void>();
  return {
    sleeps,
    after: systemClock.after,
    now: () => 1_700_000_000_000,
    sleep: (ms, signal) =>
      new Promise<void>((resolve, reject) => {
        sleeps.push(ms);
        const done = () => {
          waiting.delete(done);
          resolve();
        };
        waiting.add(done);
        signal?.addEventListener('abort', () => {
          waiting.delete(done);
          reject(signal.reason);
        });
      }),
    release: () => {
      for (const done of [...waiting]) done();
    },
  };
}

/** Resolves once `cond()` holds (polling the event loop, not a fixed sleep); fails after 5 s. */
export async function eventually(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/**
 * Hold the first event of the next call starts (the call is placed at once):
 * `placed()` resolves once a call start has reached the emulator, `release()`
 * lets the first events go and stops holding.
 */
export function holdFirstEvent(emu: A2aEmulator): { placed(): Promise<void>; release(): void } {
  const calls = emu.calls.length;
  emu.modes.holdFirstEvent = true;
  return {
    placed: () => eventually(() => emu.calls.length > calls, 'the call start to reach the service'),
    release: () => {
      emu.modes.holdFirstEvent = false;
      emu.releaseFirstEvents();
    },
  };
}

export async function collect(events: AsyncIterable<TaskEvent>): Promise<TaskEvent[]> {
  const out: TaskEvent[] = [];
  for await (const ev of events) out.push(ev);
  return out;
}

/** Shape of events for comparison: state and text. */
export function shape(events: TaskEvent[]): string[] {
  return events.map((e) => `${e.kind}:${e.state}${e.message ? `:${e.message.text}` : ''}`);
}

/** A raw JSON-RPC POST, for rows the client refuses to send. */
export async function rawRpc(url: string, key: string, method: string, params: unknown): Promise<{ status: number; body: any }> {
  const res = await request(url, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return { status: res.statusCode, body: await res.body.json() };
}

export function msg(fields: { role?: string; text?: string; taskId?: string; to?: string }): { message: Record<string, unknown> } {
  return {
    message: {
      kind: 'message',
      role: fields.role ?? 'user',
      parts: fields.text === undefined ? [] : [{ kind: 'text', text: fields.text }],
      messageId: 'm-1',
      ...(fields.taskId === undefined ? {} : { taskId: fields.taskId }),
      ...(fields.to === undefined ? {} : { metadata: { to: fields.to } }),
    },
  };
}
