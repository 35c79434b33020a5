import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCall } from '../../src/a2a/conversation.js';
import { DEFAULT_SSE_STYLE } from '../../src/emulator/a2a/sse-writer.js';
import type { RunningA2aEmulator } from '../../src/emulator/a2a/server.js';
import type { TaskEvent } from '../../src/a2a/wire.js';
import { clientFor, collect, eventually, N, shape, startEmu } from './helpers.js';

const UNTIL_QUESTION = [
  'task:submitted',
  'status-update:working',
  'status-update:working:もしもし、佐藤です。',
  'status-update:input-required:Which day should I offer?',
];
const AFTER_ANSWER = ['task:working', 'status-update:working:Tuesday is fine.', 'status-update:completed:Agreed on Tuesday.'];

describe('A2A streams over real HTTP', () => {
  let emu: RunningA2aEmulator;
  beforeAll(async () => {
    emu = await startEmu();
  });
  afterEach(() => {
    emu.emulator.sse = { ...DEFAULT_SSE_STYLE };
  });
  afterAll(async () => emu.close());

  it('message/stream gives the full event sequence, closes normally at input-required; answer → resubscribe → completed', async () => {
    const client = clientFor(emu.url);
    const first = await collect(client.streamCall({ to: N.ask, goal: 'Offer a day' }));
    expect(shape(first)).toEqual(UNTIL_QUESTION);
    expect(first.at(-1)!.final).toBe(true);
    const taskId = first[0]!.taskId;
    expect(first.every((e) => e.taskId === taskId)).toBe(true);
    expect(first.at(-1)!.message!.role).toBe('agent');

    // Reopening before answering repeats the question and closes again.
    expect(shape(await collect(client.resubscribe(taskId)))).toEqual(['task:input-required:Which day should I offer?']);

    expect((await client.answer({ taskId, text: 'Tuesday' })).delivered).toBe(true);
    expect(shape(await collect(client.resubscribe(taskId)))).toEqual(AFTER_ANSWER);
    expect(emu.emulator.task(taskId)!.answers).toEqual(['Tuesday']);
    expect(emu.emulator.calls.filter((c) => c.taskId === taskId)).toHaveLength(1);
    await client.close();
  });

  const styles = [
    { name: '1-byte chunks, CRLF, event names, keep-alive comments', style: { chunkBytes: 1, lineEnding: '\r\n', eventNames: true, comments: true } },
    { name: '3-byte chunks (cuts UTF-8), CR, wrapped results', style: { chunkBytes: 3, lineEnding: '\r', wrapped: true } },
    { name: '7-byte chunks, multi-line data, wrapped with event names', style: { chunkBytes: 7, multiLineData: true, wrapped: true, eventNames: true } },
  ] as const;
  for (const { name, style } of styles) {
    it(`reads the same sequence from a stream split at awkward boundaries: ${name}`, async () => {
      emu.emulator.sse = { ...DEFAULT_SSE_STYLE, ...style };
      const client = clientFor(emu.url);
      const first = await collect(client.streamCall({ to: N.ask, goal: 'Offer a day' }));
      expect(shape(first)).toEqual(UNTIL_QUESTION);
      await client.answer({ taskId: first[0]!.taskId, text: 'Tuesday' });
      expect(shape(await collect(client.resubscribe(first[0]!.taskId)))).toEqual(AFTER_ANSWER);
      await client.close();
    });
  }

  it('a call that cannot start: submitted → failed with the reason in the last update', async () => {
    const client = clientFor(emu.url);
    const events = await collect(client.streamCall({ to: N.fail, goal: 'Try' }));
    expect(shape(events)).toEqual(['task:submitted', 'status-update:failed:number unreachable']);
    const outcome = await runCall(client, { to: N.fail, goal: 'Try again' }, { answer: async () => 'x' });
    expect(outcome).toMatchObject({ state: 'failed', reason: 'number unreachable', endedBy: 'call', answers: 0 });
    await client.close();
  });

  it('a call that ends failed mid-way closes the stream with the reason', async () => {
    const client = clientFor(emu.url);
    const outcome = await runCall(client, { to: N.endFailed, goal: 'Try' }, { answer: async () => 'x' });
    expect(outcome).toMatchObject({ state: 'failed', reason: 'the other party hung up' });
    await client.close();
  });

  it('cancel at input-required: canceled, then answers give session_not_active and runCall ends cleanly', async () => {
    const client = clientFor(emu.url);
    const first = await collect(client.streamCall({ to: N.ask, goal: 'Offer a day' }));
    const taskId = first[0]!.taskId;
    const canceled = await client.cancel(taskId);
    expect(canceled).toMatchObject({ kind: 'task', taskId, state: 'canceled' });
    expect(await client.answer({ taskId, text: 'Tuesday' })).toMatchObject({ delivered: false, reason: 'session_not_active' });
    expect(shape(await collect(client.resubscribe(taskId)))).toEqual(['task:canceled']);
    await client.close();
  });

  it('cancel of a live stream ends it with the terminal state', async () => {
    const client = clientFor(emu.url);
    const t = await client.startCall({ to: N.never, goal: 'Ringing' });
    const stream = collect(client.resubscribe(t.taskId));
    await eventually(() => (emu.emulator.task(t.taskId)?.subscribers.size ?? 0) > 0, 'the stream to attach');
    await client.cancel(t.taskId);
    expect(shape(await stream)).toEqual(['task:submitted', 'status-update:canceled']);
    await client.close();
  });

  it('runCall: answers each question, resubscribes, and ends completed with one credit', async () => {
    const client = clientFor(emu.url);
    const before = emu.emulator.credits;
    const seen: TaskEvent[] = [];
    const questions: string[] = [];
    const outcome = await runCall(client, { to: N.twoAsks, goal: 'Ask twice' }, {
      answer: async (q) => {
        questions.push(q);
        return `answer ${questions.length}`;
      },
      onEvent: (e) => seen.push(e),
    });
    expect(outcome).toMatchObject({ state: 'completed', endedBy: 'call', answers: 2 });
    expect(questions).toEqual(['First question?', 'Second question?']);
    expect(emu.emulator.task(outcome.taskId!)!.answers).toEqual(['answer 1', 'answer 2']);
    expect(shape(seen).at(-2)).toBe('status-update:working:Thanks.');
    expect(emu.emulator.credits).toBe(before + 1);
    await client.close();
  });

  it('runCall without streaming: message/send then resubscribe', async () => {
    const client = clientFor(emu.url);
    const seen: TaskEvent[] = [];
    const outcome = await runCall(client, { to: N.ask, goal: 'Offer a day' }, { answer: async () => 'Tuesday', onEvent: (e) => seen.push(e), stream: false });
    expect(outcome).toMatchObject({ state: 'completed', answers: 1, reason: 'Agreed on Tuesday.' });
    expect(emu.emulator.calls.find((c) => c.taskId === outcome.taskId)!.via).toBe('message/send');
    await client.close();
  });

  it('runCall with nobody to answer cancels the call and says so', async () => {
    const client = clientFor(emu.url);
    const outcome = await runCall(client, { to: N.ask, goal: 'Offer a day' }, { answer: async () => null });
    expect(outcome).toMatchObject({ state: 'canceled', endedBy: 'no_answer', answers: 0 });
    expect(emu.emulator.task(outcome.taskId!)!.state).toBe('canceled');
    await client.close();
  });

  it('a stream broken mid-call is reopened with resubscribe, never by a new call start', async () => {
    const client = clientFor(emu.url);
    const before = emu.emulator.credits;
    emu.emulator.breakNextStream(2);
    const seen: TaskEvent[] = [];
    const outcome = await runCall(client, { to: N.ask, goal: 'Offer a day' }, { answer: async () => 'Tuesday', onEvent: (e) => seen.push(e) });
    expect(outcome.state).toBe('completed');
    expect(emu.emulator.credits).toBe(before + 1);
    const resubs = emu.emulator.requests.filter((r) => r.rpcMethod === 'tasks/resubscribe');
    expect(resubs.length).toBeGreaterThanOrEqual(2);
    expect(shape(seen)).toContain('status-update:input-required:Which day should I offer?');
    await client.close();
  });
});
