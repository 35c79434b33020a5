import { systemClock } from '../../src/clock.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCall } from '../../src/a2a/conversation.js';
import { describeOutcome } from '../../src/a2a/outcome-report.js';
import { Transcript } from '../../src/a2a/transcript.js';
import { isTerminal, parseTaskEvent, type TaskEvent } from '../../src/a2a/wire.js';
import type { RunningA2aEmulator } from '../../src/emulator/a2a/server.js';
import { ALICE_KEY, clientFor, collect, eventually, hookClock, N, shape, startEmu } from './helpers.js';

// A27-states: the A2A 0.3 task states the document does not list.

const task = (state: string, text?: string) => ({
  kind: 'task',
  id: 't-1',
  status: { state, ...(text ? { message: { role: 'agent', parts: [{ kind: 'text', text }] } } : {}) },
});
const update = (state: string, final?: boolean) => ({ kind: 'status-update', taskId: 't-1', status: { state }, ...(final === undefined ? {} : { final }) });

describe('A2A states the document does not list: reading (A27-states)', () => {
  it('reads rejected and auth-required as terminal and final, unknown as neither', () => {
    expect(parseTaskEvent(task('rejected', 'not allowed'))).toMatchObject({ state: 'rejected', final: true, message: { text: 'not allowed' } });
    expect(parseTaskEvent(update('auth-required'))).toMatchObject({ state: 'auth-required', final: true });
    expect(parseTaskEvent(update('unknown'))).toMatchObject({ state: 'unknown', final: false });
    expect(isTerminal('rejected')).toBe(true);
    expect(isTerminal('auth-required')).toBe(true);
    expect(isTerminal('unknown')).toBe(false);
  });

  it('reads other bindings\' spellings, and a state it does not know as unknown instead of dropping the event', () => {
    expect(parseTaskEvent(task('TASK_STATE_REJECTED'))?.state).toBe('rejected');
    expect(parseTaskEvent(update('auth_required'))?.state).toBe('auth-required');
    expect(parseTaskEvent(update('cancelled'))?.state).toBe('canceled');
    expect(parseTaskEvent(update('paused-for-review'))).toMatchObject({ state: 'unknown', final: false });
    // The server's own `final` still wins.
    expect(parseTaskEvent(update('unknown', true))?.final).toBe(true);
  });

  it('the transcript and the outcome line say what happened and what to do', () => {
    const t = new Transcript();
    const ev = (state: TaskEvent['state'], text?: string): TaskEvent => ({ kind: 'status-update', taskId: 't', state, message: text ? { role: 'agent', text } : null, final: true });
    expect(t.lines(ev('rejected', 'no'))).toEqual(['call refused by the service, not placed: no']);
    expect(t.lines(ev('auth-required'))[0]).toContain('authorisation the A2A key does not give');
    expect(t.lines(ev('unknown'))[0]).toContain('unknown');
    const line = (state: 'rejected' | 'auth-required' | 'unknown') =>
      describeOutcome({ taskId: 't', state, ended: state !== 'unknown', reason: undefined, endedBy: 'call', answers: 0 }, { patience: '5 min' }).summary;
    expect(line('rejected')).toContain('refused the call; it is not retried');
    expect(line('auth-required')).toContain('check the key and its connected agent in the portal');
    expect(line('unknown')).toContain('may have been placed');
  });
});

describe('A2A states the document does not list: over real HTTP against the scripted emulator', () => {
  let emu: RunningA2aEmulator;
  beforeAll(async () => {
    emu = await startEmu();
  });
  afterAll(async () => emu.close());

  const requestsOf = (method: string) => emu.emulator.requests.filter((r) => r.rpcMethod === method).length;

  it('rejected at the start: the stream is that one event, and runCall ends "rejected" with the reason, once', async () => {
    const client = clientFor(emu.url);
    expect(shape(await collect(client.streamCall({ to: N.reject, goal: 'Try' })))).toEqual(['task:rejected:number not allowed for this account']);
    const before = emu.emulator.credits;
    const resubs = requestsOf('tasks/resubscribe');
    const outcome = await runCall(client, { to: N.reject, goal: 'Try' }, { answer: async () => 'x' });
    expect(outcome).toMatchObject({ state: 'rejected', reason: 'number not allowed for this account', endedBy: 'call', answers: 0 });
    expect(emu.emulator.credits).toBe(before + 1);
    expect(requestsOf('tasks/resubscribe')).toBe(resubs);
    await client.close();
  });

  it('rejected at the start of message/send (no streaming): no resubscribe, outcome rejected', async () => {
    const client = clientFor(emu.url);
    const resubs = requestsOf('tasks/resubscribe');
    const outcome = await runCall(client, { to: N.reject, goal: 'Try' }, { answer: async () => 'x', stream: false });
    expect(outcome).toMatchObject({ state: 'rejected', reason: 'number not allowed for this account' });
    expect(requestsOf('tasks/resubscribe')).toBe(resubs);
    await client.close();
  });

  it('rejected mid-call ends the call with the reason', async () => {
    const client = clientFor(emu.url);
    const outcome = await runCall(client, { to: N.rejectMidCall, goal: 'Try' }, { answer: async () => 'x' });
    expect(outcome).toMatchObject({ state: 'rejected', reason: 'the agent declined the goal' });
    await client.close();
  });

  for (const [name, to, reason] of [
    ['before the call connects', N.authAtStart, 'the connected agent needs a signed-in user'],
    ['mid-call', N.authMidCall, 'the order tool needs authorisation'],
  ] as const) {
    it(`auth-required ${name}: ends "auth-required" without answering or retrying, and the task is canceled`, async () => {
      const client = clientFor(emu.url);
      const before = emu.emulator.credits;
      const asked: string[] = [];
      const outcome = await runCall(client, { to, goal: 'Order' }, { answer: async (q) => (asked.push(q), 'x') });
      expect(outcome).toMatchObject({ state: 'auth-required', reason, endedBy: 'call', answers: 0 });
      expect(asked).toEqual([]);
      expect(emu.emulator.credits).toBe(before + 1);
      const t = emu.emulator.task(outcome.taskId!)!;
      expect(t.answers).toEqual([]);
      expect(t.state).toBe('canceled');
      await client.close();
    });
  }

  it('unknown that passes: the call goes on and ends as it ends', async () => {
    const client = clientFor(emu.url);
    const seen: TaskEvent[] = [];
    const outcome = await runCall(client, { to: N.unknownPasses, goal: 'Chat' }, { answer: async () => 'x', onEvent: (e) => seen.push(e) });
    expect(outcome).toMatchObject({ state: 'completed', reason: 'Done.' });
    expect(shape(seen)).toEqual([
      'task:submitted',
      'status-update:working',
      'status-update:working:Hello.',
      'status-update:unknown:line noise',
      'status-update:working:Back again.',
      'status-update:completed:Done.',
    ]);
    await client.close();
  });

  it('a task left unknown: reopened a bounded number of times, each after a growing pause, then the outcome is "unknown" (never a new call start)', async () => {
    const resubs = requestsOf('tasks/resubscribe');
    // The clock's sleep returns at once; it records each pause and how many resubscribes had gone out before it.
    const seenAtSleep: number[] = [];
    const clock = hookClock(() => seenAtSleep.push(requestsOf('tasks/resubscribe') - resubs));
    const client = clientFor(emu.url, ALICE_KEY, { clock });
    const before = emu.emulator.credits;
    const outcome = await runCall(client, { to: N.unknownHeld, goal: 'Chat' }, { answer: async () => 'x', maxReconnects: 2 });
    expect(outcome).toMatchObject({ state: 'unknown', endedBy: 'call', answers: 0 });
    expect(requestsOf('tasks/resubscribe') - resubs).toBe(2);
    expect(clock.sleeps).toEqual([500, 1000]); // a pause before each resubscribe, doubled
    expect(seenAtSleep).toEqual([0, 1]);
    expect(emu.emulator.credits).toBe(before + 1);
    await client.close();
  });

  it('the pause before reopening an unknown task is a setting, and an interrupt during it ends the wait and cancels the call', async () => {
    const clock = hookClock();
    const client = clientFor(emu.url, ALICE_KEY, { clock });
    const outcome = await runCall(client, { to: N.unknownHeld, goal: 'Chat' }, { answer: async () => 'x', unknownBackoffMs: 2_000 });
    expect(outcome.state).toBe('unknown');
    expect(clock.sleeps).toEqual([2_000, 4_000, 8_000]);
    await client.close();

    const aborted = new AbortController();
    const waiting = clientFor(emu.url, ALICE_KEY, {
      clock: { ...systemClock, now: () => 0, sleep: async (_ms, signal) => (aborted.abort(new Error('stopping')), signal?.throwIfAborted()) },
    });
    const interrupted = await runCall(waiting, { to: N.unknownHeld, goal: 'Chat' }, { answer: async () => 'x', signal: aborted.signal });
    // The interrupt ends the wait, and the call the connector stops following is canceled (issue 15, rule 4).
    expect(interrupted).toMatchObject({ endedBy: 'interrupt', state: 'canceled', cancel: 'done' });
    expect(emu.emulator.task(interrupted.taskId!)!.state).toBe('canceled');
    await waiting.close();
  });

  it('the emulator drives the states by hand too: hangUp(taskId, "rejected")', async () => {
    const client = clientFor(emu.url);
    const t = await client.startCall({ to: N.never, goal: 'Ringing' });
    const stream = collect(client.resubscribe(t.taskId));
    await emu.emulator.waitForState(t.taskId, 'submitted');
    await eventually(() => (emu.emulator.task(t.taskId)?.subscribers.size ?? 0) > 0, 'the stream to attach');
    emu.emulator.hangUp(t.taskId, 'rejected', 'too many calls today');
    expect(shape(await stream)).toEqual(['task:submitted', 'status-update:rejected:too many calls today']);
    await client.close();
  });
});

describe('shapes the document does not show', () => {
  it('a status message without a role is still read (the agent speaking), not dropped with its question', () => {
    const ev = parseTaskEvent({ kind: 'status-update', taskId: 't-1', status: { state: 'input-required', message: { parts: [{ kind: 'text', text: 'Which day?' }], messageId: 'm-9' } } });
    expect(ev).toMatchObject({ state: 'input-required', final: true, message: { role: 'agent', text: 'Which day?', messageId: 'm-9' } });
  });

  it('a question marked final: false still ends the reading (the document: the stream ends at input-required)', () => {
    expect(parseTaskEvent(update('input-required', false))?.final).toBe(true);
    expect(parseTaskEvent(update('completed', false))?.final).toBe(true);
    expect(parseTaskEvent(update('working', true))?.final).toBe(true);
    expect(parseTaskEvent(update('working'))?.final).toBe(false);
  });
});
