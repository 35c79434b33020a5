import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningA2aEmulator } from '../../src/emulator/a2a/server.js';
import { ALICE_KEY, clientFor, msg, N, rawRpc, startEmu } from './helpers.js';

/** The message/send dispatch table of the document, row by row, over real HTTP. */
describe('message/send dispatch (emulator)', () => {
  let emu: RunningA2aEmulator;
  let taskId: string;

  beforeAll(async () => {
    emu = await startEmu();
    const client = clientFor(emu.url);
    taskId = (await client.startCall({ to: N.twoAsks, goal: 'Ask two questions' })).taskId;
    await emu.emulator.waitForState(taskId, 'input-required');
    await client.close();
  });
  afterAll(async () => emu.close());

  it('no taskId, role user, metadata.to: a call start (submitted, one credit)', async () => {
    const before = emu.emulator.credits;
    const res = await rawRpc(emu.url, ALICE_KEY, 'message/send', msg({ role: 'user', text: 'Book a table', to: N.plain }));
    expect(res.body.result).toMatchObject({ kind: 'task', status: { state: 'submitted' } });
    expect(typeof res.body.result.id).toBe('string');
    expect(emu.emulator.credits).toBe(before + 1);
  });

  it('no taskId, role user, no metadata.to: to_required and no call', async () => {
    const before = emu.emulator.credits;
    const res = await rawRpc(emu.url, ALICE_KEY, 'message/send', msg({ role: 'user', text: 'Book a table' }));
    expect(res.body.error).toMatchObject({ code: -32602, data: { code: 'to_required' } });
    expect(emu.emulator.credits).toBe(before);
  });

  it('taskId, role agent, non-empty text: an answer, spoken into the call', async () => {
    const before = emu.emulator.credits;
    const res = await rawRpc(emu.url, ALICE_KEY, 'message/send', msg({ role: 'agent', text: 'Yes', taskId }));
    expect(res.body.result).toMatchObject({ id: taskId });
    expect(emu.emulator.task(taskId)!.answers).toEqual(['Yes']);
    expect(emu.emulator.credits).toBe(before);
  });

  it('taskId, role user (not an answer), no number: assistant_role_required', async () => {
    const res = await rawRpc(emu.url, ALICE_KEY, 'message/send', msg({ role: 'user', text: 'Yes', taskId }));
    expect(res.body.error).toMatchObject({ code: -32602, data: { code: 'assistant_role_required' } });
  });

  it('taskId, role agent, empty text (not an answer): assistant_text_required', async () => {
    const res = await rawRpc(emu.url, ALICE_KEY, 'message/send', msg({ role: 'agent', text: '  ', taskId }));
    expect(res.body.error).toMatchObject({ code: -32602, data: { code: 'assistant_text_required' } });
    const noParts = await rawRpc(emu.url, ALICE_KEY, 'message/send', msg({ role: 'agent', taskId }));
    expect(noParts.body.error.data.code).toBe('assistant_text_required');
  });

  it('taskId but role user with metadata.to: treated as a new message, so a NEW call is placed (what the typed client prevents)', async () => {
    const before = emu.emulator.credits;
    const res = await rawRpc(emu.url, ALICE_KEY, 'message/send', msg({ role: 'user', text: 'Yes', taskId, to: N.plain }));
    expect(res.body.result.id).not.toBe(taskId);
    expect(emu.emulator.credits).toBe(before + 1);
  });

  it('message/stream without metadata.to: to_required as plain JSON, no call', async () => {
    const before = emu.emulator.credits;
    const res = await rawRpc(emu.url, ALICE_KEY, 'message/stream', msg({ role: 'user', text: 'Book' }));
    expect(res.body.error.data.code).toBe('to_required');
    expect(emu.emulator.credits).toBe(before);
  });

  it('protocol errors: unknown method and missing message; tasks/get (A2A 0.3) is -32601 only when switched off', async () => {
    expect((await rawRpc(emu.url, ALICE_KEY, 'tasks/pushNotificationConfig/set', { id: taskId })).body.error.code).toBe(-32601);
    expect((await rawRpc(emu.url, ALICE_KEY, 'tasks/get', { id: taskId })).body.result).toMatchObject({ kind: 'task', id: taskId });
    emu.emulator.modes.tasksGet = false;
    expect((await rawRpc(emu.url, ALICE_KEY, 'tasks/get', { id: taskId })).body.error.code).toBe(-32601);
    emu.emulator.modes.tasksGet = true;
    expect((await rawRpc(emu.url, ALICE_KEY, 'message/send', {})).body.error.code).toBe(-32602);
  });

  it('the typed client sends a call start and an answer exactly as the two rows say', async () => {
    const client = clientFor(emu.url);
    const t = await client.startCall({ to: N.ask, goal: 'Offer a day' });
    await emu.emulator.waitForState(t.taskId, 'input-required');
    await client.answer({ taskId: t.taskId, text: 'Tuesday' });
    await client.close();
    const sent = emu.emulator.requests.filter((r) => r.message !== undefined).slice(-2).map((r) => r.message);
    expect(sent[0]).toMatchObject({ role: 'user', parts: [{ kind: 'text', text: 'Offer a day' }], metadata: { to: N.ask } });
    expect(sent[0]).not.toHaveProperty('taskId');
    expect(sent[1]).toMatchObject({ role: 'agent', parts: [{ kind: 'text', text: 'Tuesday' }], taskId: t.taskId });
    expect(sent[1]).not.toHaveProperty('metadata');
  });
});
