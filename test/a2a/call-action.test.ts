import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { placeCall, type CallIo } from '../../src/cli/commands/call-action.js';
import type { CallOptions } from '../../src/cli/commands/call-options.js';
import { MODE_PRESETS, type ModePresetName } from '../../src/emulator/a2a/modes.js';
import type { RunningA2aEmulator } from '../../src/emulator/a2a/server.js';
import { ALICE_KEY, gatedClock, holdFirstEvent, hookClock, N, SCRIPTS, startEmu } from './helpers.js';

/**
 * `dataset-connector call` in process (the same action the CLI runs, with the
 * terminal, Ctrl-C and the clock injected), against every server mode: what
 * a person reads, the exit code, and the credits spent.
 */
interface Run {
  code: number;
  stdout: string;
  stderr: string;
  exits: number[];
  credits: number;
}

/** A test terminal: no TTY, output captured, Ctrl-C pressed by the test. */
interface TestIo extends CallIo {
  lines: string[];
  errLines: string[];
  exits: number[];
  sigint(): void;
}

function testIo(clock: Clock): TestIo {
  const lines: string[] = [];
  const errLines: string[] = [];
  const exits: number[] = [];
  const handlers = new Set<() => void>();
  return {
    lines,
    errLines,
    exits,
    sigint: () => {
      for (const h of [...handlers]) h();
    },
    out: (line: string) => void lines.push(line),
    err: (line: string) => void errLines.push(line),
    stdin: Readable.from([]),
    stdout: new PassThrough(),
    env: { A2A_KEY: ALICE_KEY },
    onSigint: (h: () => void) => {
      handlers.add(h);
      return () => handlers.delete(h);
    },
    exit: (code: number) => void exits.push(code),
    clock,
  };
}

const MODES = Object.keys(MODE_PRESETS) as ModePresetName[];

describe('dataset-connector call (in process)', () => {
  let dir: string;
  let answers2: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'call-action-'));
    answers2 = join(dir, 'answers2.txt');
    await writeFile(answers2, 'one\ntwo\n');
  });
  afterAll(async () => rm(dir, { recursive: true, force: true }));

  describe.each(MODES)('server mode %s', (mode) => {
    let emu: RunningA2aEmulator;
    beforeAll(async () => {
      emu = await startEmu(SCRIPTS, { presets: [mode], ...(mode === 'late-first-event' ? { modes: { firstEventDelayMs: 20 } } : {}) });
    });
    afterAll(async () => emu.close());

    /** Run `call --to <to> --base-url <emulator> --yes …` with `io`; `during` runs while the call is going. */
    async function run(to: string, extra: Partial<CallOptions> = {}, clock: Clock = hookClock(), during?: (io: TestIo) => Promise<void>): Promise<Run> {
      const io = testIo(clock);
      const before = emu.emulator.credits;
      const placing = placeCall({ to, goal: `Call in mode ${mode}`, baseUrl: emu.url, yes: true, ...extra }, undefined, io);
      await during?.(io);
      const code = await placing;
      return { code, stdout: io.lines.join('\n'), stderr: io.errLines.join('\n'), exits: io.exits, credits: emu.emulator.credits - before };
    }

    it('answers from the file, each question once; completed, exit 0', async () => {
      const r = await run(N.twoAsks, { answers: answers2 });
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout.match(/you: one/g)).toHaveLength(1);
      expect(r.stdout.match(/you: two/g)).toHaveLength(1);
      expect(r.stdout).toContain('outcome: completed; 2 answers given');
      expect(r.credits).toBe(1);
    });

    it('a call that ended before it could be reopened: reported ended, never as refused, never "call again"', async () => {
      const r = await run(N.endsAfterAnswer, { answers: answers2 });
      if (mode === 'refused-resubscribe-no-get') {
        expect(r.code).toBe(4);
        expect(r.stdout).toContain('outcome: ended, outcome unknown; 1 answer given');
        expect(r.stderr).toContain('the call has ended but the service does not say how');
      } else {
        expect(r.code).toBe(0);
        expect(r.stdout).toContain('outcome: completed (Order confirmed.); 1 answer given');
      }
      expect(r.stdout + r.stderr).not.toMatch(/refused|nothing from it was published|run the command again|call again/i);
      expect(r.credits).toBe(1);
    });

    it('call_not_started that keeps coming: waits --patience-minutes, cancels the task and says so (exit 3)', async () => {
      emu.emulator.modes.answersNotStarted = Infinity;
      try {
        const clock = hookClock();
        const r = await run(N.ask, { answers: answers2, patienceMinutes: 2 }, clock);
        expect(r.code).toBe(3);
        expect(r.stdout).toContain('call canceled');
        expect(r.stdout).toMatch(/kept the call waiting for 2 min .*the call did not connect.*canceled task task-/);
        expect(r.stderr).toContain('--patience-minutes');
        expect(clock.sleeps.reduce((a, b) => a + b, 0)).toBe(120_000);
        const task = emu.emulator.task(emu.emulator.calls.at(-1)!.taskId)!;
        expect(task.state).toBe('canceled');
        expect(task.answers).toEqual([]);
        // The answer was picked but never taken: the transcript must not say it was spoken (review of issue 15).
        expect(r.stdout).not.toContain('you: one');
        expect(r.credits).toBe(1);
      } finally {
        emu.emulator.modes.answersNotStarted = 0;
      }
    });

    it('Ctrl-C between the call start and its first event, the task id comes within the grace: canceled, exit 130', async () => {
      const held = holdFirstEvent(emu.emulator);
      const r = await run(N.ask, { answers: answers2 }, gatedClock(), async (io) => {
        await held.placed();
        io.sigint();
        held.release();
      });
      const taskId = emu.emulator.calls.at(-1)!.taskId;
      expect(r.code).toBe(130);
      expect(r.stdout).toContain(`interrupted; task ${taskId} was canceled`);
      expect(emu.emulator.task(taskId)!.state).toBe('canceled');
      expect(r.credits).toBe(1);
    });

    it('Ctrl-C between the call start and its first event, no task id within the grace: "a call may be ringing", exit 4', async () => {
      const held = holdFirstEvent(emu.emulator);
      const clock = gatedClock();
      const r = await run(N.ask, { answers: answers2 }, clock, async (io) => {
        await held.placed();
        io.sigint();
        clock.release(); // the grace passes
      });
      expect(r.code).toBe(4);
      expect(r.stderr).toContain('interrupted: a call may be ringing; task id unknown');
      expect(r.stderr).toContain('check the call history in the portal before placing another call');
      expect(r.stderr).not.toContain('internal error');
      expect(r.credits).toBe(1);
      held.release();
    });
  });

  describe('in the document mode', () => {
    let emu: RunningA2aEmulator;
    beforeAll(async () => {
      emu = await startEmu();
    });
    afterAll(async () => emu.close());

    it('a task left unknown: reopened after growing pauses on the injected clock, then exit 4 "may have been placed"', async () => {
      const clock = hookClock();
      const io = testIo(clock);
      const code = await placeCall({ to: N.unknownHeld, goal: 'Chat', baseUrl: emu.url, yes: true }, undefined, io);
      expect(code).toBe(4);
      expect(clock.sleeps).toEqual([500, 1_000, 2_000]);
      expect(io.errLines.join('\n')).toMatch(/state unknown.*may have been placed/);
    });

    it('a second Ctrl-C leaves at once, saying which task may still be live', async () => {
      const held = holdFirstEvent(emu.emulator);
      const clock = gatedClock();
      const io = testIo(clock);
      const placing = placeCall({ to: N.ask, goal: 'Leave', baseUrl: emu.url, yes: true }, undefined, io);
      await held.placed();
      io.sigint();
      io.sigint();
      expect(io.exits).toEqual([4]);
      expect(io.errLines.join('\n')).toContain('leaving at once: a call may be ringing; task id unknown');
      clock.release();
      expect(await placing).toBe(4);
      held.release();
    });
  });
});

describe('call: what it is given, checked before anything rings (review of issue 15)', () => {
  it('--answers naming a file that cannot be read is a usage error naming it (exit 2), not an internal error', async () => {
    const io = testIo(hookClock());
    const code = await placeCall({ to: '+81312345678', goal: 'Ask about the order', baseUrl: 'http://127.0.0.1:9', yes: true, answers: '/nonexistent/answers.txt' }, undefined, io);
    expect(code).toBe(2);
    expect(io.errLines.join('\n')).toMatch(/--answers: cannot read \/nonexistent\/answers\.txt \(ENOENT\); give a text file with one answer per line/);
    expect(io.lines).toEqual([]);
  });

  it('a missing --key-file is named as the A2A key, not a dataset key', async () => {
    const io = testIo(hookClock());
    io.env = {};
    await expect(placeCall({ to: '+81312345678', goal: 'Ask', baseUrl: 'http://127.0.0.1:9', yes: true, keyFile: '/nonexistent/a2a.key' }, undefined, io)).rejects.toMatchObject({
      code: 'KEY_NOT_FOUND',
      message: expect.stringMatching(/^no A2A key found; tried: file \/nonexistent\/a2a\.key \(not found\)/),
    });
  });
});

describe('call: a bare "invalid params" refusal of an answer is not taken for the end of the call (review of issue 15)', () => {
  let emu: RunningA2aEmulator;
  beforeAll(async () => {
    emu = await startEmu(SCRIPTS, { modes: { tasksGet: false } });
  });
  afterAll(async () => emu.close());

  it('a live call whose answer is refused with -32602 and no tasks/get is canceled, not left open as "ended, outcome unknown"', async () => {
    emu.emulator.modes.answersInvalidParams = Infinity;
    const dir = await mkdtemp(join(tmpdir(), 'call-invalid-'));
    const answers = join(dir, 'a.txt');
    await writeFile(answers, 'one\n');
    const io = testIo(hookClock());
    const code = await placeCall({ to: N.ask, goal: 'Ask about the order', baseUrl: emu.url, yes: true, answers }, undefined, io);
    const task = emu.emulator.task(emu.emulator.calls.at(-1)!.taskId)!;
    expect(task.state).toBe('canceled');
    expect(task.answers).toEqual([]);
    expect(io.lines.join('\n')).not.toContain('you: one');
    expect(code).not.toBe(0);
    await rm(dir, { recursive: true, force: true });
  });
});
