import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2A_ADMIN_PATH } from '../../src/emulator/a2a/server.js';
import type { RunningA2aEmulator } from '../../src/emulator/a2a/server.js';
import { ALICE_KEY, clientFor, collect, eventually, msg, N, rawRpc, shape, startEmu } from './helpers.js';

/** The A2A emulator's switchable server behaviours (issue 15), seen on the wire. */
describe('A2A emulator modes', () => {
  let emu: RunningA2aEmulator;
  beforeAll(async () => {
    emu = await startEmu();
  });
  afterAll(async () => emu.close());

  const admin = async (method: 'GET' | 'POST', route: string, body?: unknown) => {
    const res = await request(`${emu.url}${A2A_ADMIN_PATH}${route}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    return { status: res.statusCode, body: (await res.body.json()) as Record<string, any> };
  };

  it('the admin route shows and switches modes by preset and by field, and refuses unknown ones', async () => {
    const shown = await admin('GET', '/modes');
    expect(shown.body.modes).toMatchObject({ lagAfterAnswerReads: 0, endedResubscribe: 'replay', tasksGet: true });
    expect(Object.keys(shown.body.presets)).toContain('lag-after-answer');
    const set = await admin('POST', '/modes', { presets: ['refused-resubscribe', 'wrapped-events'], answers_not_started: 'always' });
    expect(set.status).toBe(200);
    expect(set.body.modes).toMatchObject({ endedResubscribe: 'terminal-state', endedErrors: 'public-a2a', answersNotStarted: 'always' });
    expect(set.body.sse).toMatchObject({ wrapped: true, eventNames: true });
    expect((await admin('POST', '/modes', { presets: ['no-such-mode'] })).status).toBe(400);
    expect((await admin('POST', '/modes', { lag: 3 })).status).toBe(400);
    expect((await admin('POST', '/modes', { presets: ['document'] })).body.modes).toMatchObject({ endedResubscribe: 'replay', answersNotStarted: 0 });
  });

  it('lag after an answer: the reply and the next reads show the answered question with the same message id', async () => {
    emu.emulator.useModes(['lag-after-answer']);
    const client = clientFor(emu.url);
    const first = await collect(client.streamCall({ to: N.ask, goal: 'Lag' }));
    const question = first.at(-1)!;
    expect(question.message!.messageId).toMatch(/^msg-/);
    const reply = await client.sendAnswer({ taskId: question.taskId, text: 'Tuesday' });
    expect(reply).toMatchObject({ state: 'input-required', message: { messageId: question.message!.messageId } });
    expect(shape(await collect(client.resubscribe(question.taskId)))).toEqual(['task:input-required:Which day should I offer?']);
    const after = await collect(client.resubscribe(question.taskId));
    expect(after[0]!.state).toBe('working');
    expect(emu.emulator.task(question.taskId)!.answers).toEqual(['Tuesday']);
    await client.close();
    emu.emulator.useModes(['document']);
  });

  it('an ended task: resubscribe refused -32602 "terminal state", cancel -32002, an answer -32602; tasks/get tells the state', async () => {
    emu.emulator.useModes(['refused-resubscribe']);
    const client = clientFor(emu.url);
    const t = await client.startCall({ to: N.plain, goal: 'Ends' });
    await emu.emulator.waitForState(t.taskId, 'completed');
    const resub = await rawRpc(emu.url, ALICE_KEY, 'tasks/resubscribe', { id: t.taskId });
    expect(resub.body.error).toEqual({ code: -32602, message: `Task ${t.taskId} is in terminal state: completed` });
    expect((await rawRpc(emu.url, ALICE_KEY, 'tasks/cancel', { id: t.taskId })).body.error.code).toBe(-32002);
    expect((await rawRpc(emu.url, ALICE_KEY, 'message/send', msg({ role: 'agent', text: 'late', taskId: t.taskId }))).body.error.code).toBe(-32602);
    expect((await client.getTask(t.taskId)).state).toBe('completed');
    await client.close();
    emu.emulator.useModes(['document']);
  });

  it('errors as SSE: a refused resubscribe is one event on a 200 text/event-stream', async () => {
    emu.emulator.useModes(['errors-as-sse']);
    const client = clientFor(emu.url);
    const t = await client.startCall({ to: N.plain, goal: 'Ends' });
    await emu.emulator.waitForState(t.taskId, 'completed');
    const res = await request(emu.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${ALICE_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tasks/resubscribe', params: { id: t.taskId } }),
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/event-stream');
    const text = await res.body.text();
    expect(JSON.parse(text.replace(/^data: /, ''))).toMatchObject({ id: 7, error: { data: { code: 'session_not_active' } } });
    await expect(collect(client.resubscribe(t.taskId))).rejects.toMatchObject({ code: 'session_not_active' });
    await client.close();
    emu.emulator.useModes(['document']);
  });

  it('a held first event: the call is placed (and charged) at once, its first event waits for the release', async () => {
    emu.emulator.useModes(['document'], { holdFirstEvent: true });
    const client = clientFor(emu.url);
    const before = emu.emulator.credits;
    const events = collect(client.streamCall({ to: N.plain, goal: 'Late' }));
    await eventually(() => emu.emulator.credits > before, 'the call to be placed');
    // The script runs meanwhile; only the stream waits.
    await emu.emulator.waitForState(emu.emulator.calls.at(-1)!.taskId, 'completed');
    expect(emu.emulator.credits).toBe(before + 1);
    const released = await admin('POST', '/release-first-events');
    expect(released.body).toEqual({ released: true });
    expect(shape(await events)).toEqual(['task:submitted', 'status-update:working', 'status-update:working:Hello.', 'status-update:working:Goodbye.', 'status-update:completed']);
    const calls = await admin('GET', '/calls');
    expect(calls.body.calls.at(-1)).toMatchObject({ to: N.plain, state: 'completed' });
    await client.close();
    emu.emulator.useModes(['document']);
  });
});
