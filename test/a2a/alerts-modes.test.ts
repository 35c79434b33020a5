import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock } from '../../src/clock.js';
import { AlertMonitor } from '../../src/alerts/monitor.js';
import { alertsConfigSchema, CallAlerts, type CallAlertConfig, type DatasetAlertStatus } from '../../src/alerts/alerts.js';
import { MODE_PRESETS, type ModePresetName } from '../../src/emulator/a2a/modes.js';
import type { RunningA2aEmulator } from '../../src/emulator/a2a/server.js';
import { startEmu } from './helpers.js';
import { Secret } from '../../src/secret.js';
import { capture } from '../log/capture.js';
import { eventually, gatedClock, holdFirstEvent, hookClock } from './helpers.js';

/**
 * Issue 15 for the daemon's call alerts: every server mode × the rules that
 * touch an alert call (answered once, ended before reopened, call_not_started
 * past the patience, a stop during the call and before its first event).
 * Every scenario asserts the credits: one call per alert.
 */
const KEY = 'tba_live_ALERTMODES_77aa';
const ASKS = '+81355550200';
const HANGS_UP = '+81355550201';
const RINGING = '+81355550202';
const MODES = Object.keys(MODE_PRESETS) as ModePresetName[];

/** Held since the epoch: due at any `now`, inside allowed hours 00:00-24:00. */
const HELD: DatasetAlertStatus = { dataset: 'shop-m', held: { kind: 'guard', reason: 'would delete 40% of records', since: 0 }, stopped: null };

describe.each(MODES)('call alerts, server mode %s', (mode) => {
  let emu: RunningA2aEmulator;
  let base: CallAlertConfig;
  beforeAll(async () => {
    emu = await startEmu(
      {
        [ASKS]: { steps: [{ ask: 'They ask whether I can approve it now.' }, { say: 'I see.' }, { ask: 'Shall I tell them anything else?' }, { end: 'completed', say: 'Understood.' }] },
        [HANGS_UP]: { steps: [{ ask: 'Anything to add?', hangUp: { end: 'completed', say: 'They hung up.' } }] },
        [RINGING]: { connect: 'never' },
      },
      { keys: { [KEY]: 'shop-account' }, presets: [mode], ...(mode === 'late-first-event' ? { modes: { firstEventDelayMs: 20 } } : {}) },
    );
    base = alertsConfigSchema.parse({ call: { to: ASKS, key: { env: 'X' }, base_url: emu.url, allowed_hours: '00:00-24:00', timezone: 'Asia/Tokyo' } }).call!;
  });
  afterAll(async () => emu.close());

  function alertsTo(to: string, clock: Clock = hookClock(), extra: Partial<CallAlertConfig> = {}) {
    const log = capture('info');
    const alerts = new CallAlerts({ config: { ...base, to, ...extra }, key: new Secret(KEY), logger: log.logger, clock });
    return { log, alerts };
  }
  const lastTask = () => emu.emulator.task(emu.emulator.calls.at(-1)!.taskId)!;

  it('each question is answered once (the state may lag after an answer); one call, logged completed', async () => {
    const before = emu.emulator.credits;
    const { log, alerts } = alertsTo(ASKS);
    const placed = await alerts.check([HELD]);
    await alerts.close();
    expect(emu.emulator.credits).toBe(before + 1);
    const task = lastTask();
    expect(task.answers).toHaveLength(2);
    expect(new Set(task.answers).size).toBe(1); // the one informing answer, once per question
    expect(task.state).toBe('completed');
    expect(log.lines().filter((l) => l.event === 'alert.call').map((l) => l.outcome)).toEqual(['placed', 'completed']);
    expect(placed[0]!.taskId).toBe(task.id);
  });

  it('a call that ended before it could be reopened is logged as ended, never as failed or refused', async () => {
    const before = emu.emulator.credits;
    const { log, alerts } = alertsTo(HANGS_UP);
    await alerts.check([HELD]);
    await alerts.close();
    expect(emu.emulator.credits).toBe(before + 1);
    expect(log.lines().filter((l) => l.event === 'alert.failed')).toEqual([]);
    const ended = log.lines().filter((l) => l.event === 'alert.call').at(-1)!;
    if (mode === 'refused-resubscribe-no-get') expect(ended).toMatchObject({ outcome: 'unknown', ended: true, ended_by: 'call', level: 40 });
    else expect(ended).toMatchObject({ outcome: 'completed', ended: true, ended_by: 'call', level: 30 });
  });

  it('call_not_started past alerts.call.patience_minutes: the call is canceled and the log says why', async () => {
    emu.emulator.modes.answersNotStarted = Infinity;
    try {
      const before = emu.emulator.credits;
      const clock = hookClock();
      const { log, alerts } = alertsTo(ASKS, clock, { patience_minutes: 1 });
      await alerts.check([HELD]);
      await alerts.close();
      expect(emu.emulator.credits).toBe(before + 1);
      expect(lastTask().state).toBe('canceled');
      expect(lastTask().answers).toEqual([]);
      expect(clock.sleeps.reduce((a, b) => a + b, 0)).toBe(60_000);
      expect(log.lines().filter((l) => l.event === 'alert.call').at(-1)).toMatchObject({
        outcome: 'canceled',
        ended_by: 'patience',
        cancel: 'done',
        setting: 'alerts.call.patience_minutes',
        level: 40,
      });
    } finally {
      emu.emulator.modes.answersNotStarted = 0;
    }
  });

  it('the daemon stops during a call: followed for followMs, then canceled and logged', async () => {
    const before = emu.emulator.credits;
    const { log, alerts } = alertsTo(RINGING);
    const placed = await alerts.check([HELD]);
    await alerts.close({ followMs: 5_000 });
    expect(emu.emulator.credits).toBe(before + 1);
    expect(emu.emulator.task(placed[0]!.taskId!)!.state).toBe('canceled');
    expect(log.lines().filter((l) => l.event === 'alert.call').at(-1)).toMatchObject({ outcome: 'canceled', ended_by: 'interrupt', cancel: 'done', level: 40 });
  });

  for (const arrives of [true, false]) {
    it(`the daemon stops before the call's first event; the task id ${arrives ? 'comes within the grace: canceled' : 'never comes: logged as possibly ringing'}`, async () => {
      const held = holdFirstEvent(emu.emulator);
      const clock = gatedClock();
      const log = capture('info');
      const alerts = new CallAlerts({ config: { ...base, to: ASKS }, key: new Secret(KEY), logger: log.logger, clock });
      const monitor = new AlertMonitor(alerts, { statuses: () => [HELD], clock, logger: log.logger });
      const before = emu.emulator.credits;
      try {
        const checking = monitor.check();
        await held.placed();
        const stopping = monitor.stop(5_000); // what Service.stop does on SIGTERM
        await eventually(() => clock.sleeps.length === 1, 'the follow wait');
        clock.release(); // followMs passes with the call still unanswered
        await eventually(() => clock.sleeps.length === 2, 'the grace for the task id');
        if (arrives) held.release();
        else clock.release();
        await stopping;
        const placed = await checking;
        expect(emu.emulator.credits).toBe(before + 1);
        const taskId = emu.emulator.calls.at(-1)!.taskId;
        if (arrives) {
          expect(placed).toEqual([expect.objectContaining({ taskId })]);
          expect(emu.emulator.task(taskId)!.state).toBe('canceled');
          expect(log.lines().filter((l) => l.event === 'alert.call').at(-1)).toMatchObject({ task_id: taskId, ended_by: 'interrupt', cancel: 'done' });
        } else {
          expect(placed).toEqual([expect.objectContaining({ errorCode: 'OUTCOME_UNKNOWN' })]);
          expect(log.lines().filter((l) => l.event === 'alert.failed')).toEqual([
            expect.objectContaining({ task_id: null, ended_by: 'interrupt', outcome: 'unknown', code: 'OUTCOME_UNKNOWN', level: 50, msg: expect.stringContaining('a call may be ringing') }),
          ]);
        }
      } finally {
        held.release();
      }
    });
  }
});
