import { inspect } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2aError } from '../../src/a2a/errors.js';
import { Transport } from '../../src/a2a/transport.js';
import { hasCode } from '../../src/errors.js';
import { Secret } from '../../src/secret.js';
import type { RunningA2aEmulator } from '../../src/emulator/a2a/server.js';
import { ALICE_KEY, BOB_KEY, clientFor, collect, hookClock, msg, N, startEmu } from './helpers.js';

async function caught(p: Promise<unknown> | (() => Promise<unknown>)): Promise<A2aError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    expect(err).toBeInstanceOf(A2aError);
    return err as A2aError;
  }
  throw new Error('expected a rejection');
}

/** Every error code of the document, as the client raises it, over real HTTP (A29: decided on the text code). */
describe('A2A client errors', () => {
  let emu: RunningA2aEmulator;
  beforeAll(async () => {
    emu = await startEmu();
  });
  afterAll(async () => emu.close());

  const transport = () =>
    new Transport({ baseUrl: emu.url, key: new Secret(ALICE_KEY), requestTimeoutMs: 5000, connectTimeoutMs: 5000, streamIdleTimeoutMs: 5000 });

  it.each([
    ['to_required', msg({ role: 'user', text: 'Book' }), -32602],
    ['assistant_role_required', msg({ role: 'user', text: 'x', taskId: 'task-x' }), -32602],
    ['assistant_text_required', msg({ role: 'agent', text: '', taskId: 'task-x' }), -32602],
  ])('%s from the service becomes A2aError with that code', async (code, params, rpcCode) => {
    const t = transport();
    const err = await caught(t.call('message/send', params, { callStart: false }));
    expect(err.code).toBe(code);
    expect(err.rpcCode).toBe(rpcCode);
    expect(err.action).toBe('reject');
    await t.close();
  });

  it('task_not_found for an answer, a cancel and a resubscribe of an unknown task', async () => {
    const client = clientFor(emu.url);
    expect((await caught(client.sendAnswer({ taskId: 'task-nope', text: 'hi' }))).code).toBe('task_not_found');
    expect((await caught(client.cancel('task-nope'))).code).toBe('task_not_found');
    expect((await caught(collect(client.resubscribe('task-nope')))).code).toBe('task_not_found');
    await client.close();
  });

  it('session_principal_mismatch when another account answers, cancels or resubscribes', async () => {
    const alice = clientFor(emu.url);
    const bob = clientFor(emu.url, BOB_KEY);
    const t = await alice.startCall({ to: N.ask, goal: 'Offer a day' });
    await emu.emulator.waitForState(t.taskId, 'input-required');
    const e1 = await caught(bob.sendAnswer({ taskId: t.taskId, text: 'Friday' }));
    expect(e1.code).toBe('session_principal_mismatch');
    expect(e1.action).toBe('stop');
    expect((await caught(bob.cancel(t.taskId))).code).toBe('session_principal_mismatch');
    expect((await caught(collect(bob.resubscribe(t.taskId)))).code).toBe('session_principal_mismatch');
    expect(emu.emulator.task(t.taskId)!.answers).toEqual([]);
    await alice.cancel(t.taskId);
    await Promise.all([alice.close(), bob.close()]);
  });

  it('session_not_active: sendAnswer throws it, answer() ends the exchange cleanly', async () => {
    const client = clientFor(emu.url);
    const t = await client.startCall({ to: N.plain, goal: 'Say hello' });
    await emu.emulator.waitForState(t.taskId, 'completed');
    expect((await caught(client.sendAnswer({ taskId: t.taskId, text: 'late' }))).code).toBe('session_not_active');
    expect(await client.answer({ taskId: t.taskId, text: 'late' })).toEqual({ delivered: false, attempts: 1, reason: 'session_not_active' });
    expect((await caught(client.cancel(t.taskId))).code).toBe('session_not_active');
    await client.close();
  });

  it('call_not_started: answer() waits on the injected clock and sends the same answer again', async () => {
    let taskId = '';
    const clock = hookClock(() => emu.emulator.connect(taskId));
    const client = clientFor(emu.url, ALICE_KEY, { clock, answerRetry: { firstWaitMs: 2000, maxWaitMs: 2000 } });
    const t = await client.startCall({ to: N.never, goal: 'Wait for connect' });
    taskId = t.taskId;
    expect((await caught(client.sendAnswer({ taskId, text: 'early' }))).code).toBe('call_not_started');
    // The hook connects the call during the first wait; the state change is asynchronous, so allow a few waits.
    const sent = await client.answer({ taskId, text: 'Hello there' });
    expect(sent.delivered).toBe(true);
    expect(sent.attempts).toBeGreaterThanOrEqual(2);
    expect(clock.sleeps.every((ms) => ms === 2000)).toBe(true);
    expect(emu.emulator.task(taskId)!.answers).toEqual(['Hello there']);
    expect(emu.emulator.creditsOf('alice')).toBe(emu.emulator.calls.filter((c) => c.account === 'alice').length);
    await client.close();
  });

  it('call_not_started forever: waits within the patience, then CALL_NOT_CONNECTED; the call is never started again', async () => {
    const clock = hookClock();
    const client = clientFor(emu.url, ALICE_KEY, { clock, answerRetry: { patienceMs: 2000, firstWaitMs: 1000, maxWaitMs: 1000 } });
    const before = emu.emulator.credits;
    const t = await client.startCall({ to: N.never, goal: 'Never connects' });
    const err = await caught(client.answer({ taskId: t.taskId, text: 'anyone?' }));
    expect(err.code).toBe('CALL_NOT_CONNECTED');
    expect(clock.sleeps).toEqual([1000, 1000]);
    expect(emu.emulator.credits).toBe(before + 1);
    await client.cancel(t.taskId);
    await client.close();
  });

  it('client-side checks refuse bad call starts and answers before sending anything', async () => {
    const client = clientFor(emu.url);
    const sent = emu.emulator.requests.length;
    expect((await caught(client.startCall({ to: '090-1234-5678', goal: 'x' }))).code).toBe('INVALID_NUMBER');
    expect((await caught(client.startCall({ to: '+81 3 1234', goal: 'x' }))).code).toBe('INVALID_NUMBER');
    expect((await caught(client.startCall({ to: N.plain, goal: '   ' }))).code).toBe('GOAL_REQUIRED');
    expect((await caught(collect(client.streamCall({ to: '+0123', goal: 'x' })))).code).toBe('INVALID_NUMBER');
    expect((await caught(client.sendAnswer({ taskId: '', text: 'x' }))).code).toBe('ANSWER_INVALID');
    expect((await caught(client.sendAnswer({ taskId: 'task-1', text: ' ' }))).code).toBe('ANSWER_INVALID');
    expect(emu.emulator.requests.length).toBe(sent);
    await client.close();
  });

  it('an unknown or revoked key is UNAUTHORIZED (action stop), also for the Agent Card', async () => {
    const stranger = clientFor(emu.url, 'tba_live_stranger');
    const err = await caught(stranger.fetchAgentCard());
    expect(err.code).toBe('UNAUTHORIZED');
    expect(err.action).toBe('stop');
    emu.emulator.addKey('tba_live_temp', 'alice');
    const temp = clientFor(emu.url, 'tba_live_temp');
    expect((await temp.fetchAgentCard()).capabilities.streaming).toBe(true);
    emu.emulator.revokeKey('tba_live_temp');
    expect((await caught(temp.startCall({ to: N.plain, goal: 'x' }))).code).toBe('UNAUTHORIZED');
    await Promise.all([stranger.close(), temp.close()]);
  });

  it('a lost answer to a call start is OUTCOME_UNKNOWN and is not retried (one call, one credit)', async () => {
    const client = clientFor(emu.url);
    const before = emu.emulator.credits;
    const starts = () => emu.emulator.requests.filter((r) => r.rpcMethod === 'message/send').length;
    const sends = starts();
    emu.emulator.dropNextCallStartAnswer();
    const err = await caught(client.startCall({ to: N.plain, goal: 'Lost answer' }));
    expect(err.code).toBe('OUTCOME_UNKNOWN');
    expect(err.action).toBe('hold');
    expect(emu.emulator.credits).toBe(before + 1);
    expect(starts()).toBe(sends + 1);
    await client.close();
  });

  it('nothing listening: NETWORK_ERROR, nothing was sent', async () => {
    const { startA2aEmulator } = await import('../../src/emulator/a2a/server.js');
    const gone = await startA2aEmulator({ port: 0, keys: {} });
    await gone.close();
    const client = clientFor(gone.url);
    const err = await caught(client.startCall({ to: N.plain, goal: 'x' }));
    expect(err.code).toBe('NETWORK_ERROR');
    expect(hasCode(err, 'NETWORK_ERROR')).toBe(true);
    await client.close();
  });

  it('a canary key never shows in errors, their JSON, inspect output or the client', async () => {
    const canary = 'tba_live_CANARY_5f1e9c0d7a2b';
    const client = clientFor(emu.url, canary);
    const errors = [
      await caught(client.fetchAgentCard()),
      await caught(client.startCall({ to: N.plain, goal: 'x' })),
      await caught(collect(client.resubscribe('task-x'))),
    ];
    const offline = clientFor('http://127.0.0.1:1', canary);
    errors.push(await caught(offline.startCall({ to: N.plain, goal: 'x' })));
    const dump = [
      ...errors.flatMap((e) => [e.message, String(e.stack), JSON.stringify(e), inspect(e, { depth: 8 }), JSON.stringify(e.context)]),
      inspect(client, { depth: 8 }),
      JSON.stringify({ client }),
    ].join('\n');
    expect(dump).not.toContain('CANARY');
    await Promise.all([client.close(), offline.close()]);
  });
});
