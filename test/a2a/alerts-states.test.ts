import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { alertsConfigSchema, CallAlerts, type CallAlertConfig } from '../../src/alerts/alerts.js';
import type { RunningA2aEmulator } from '../../src/emulator/a2a/server.js';
import { startA2aEmulator } from '../../src/emulator/a2a/server.js';
import { Secret } from '../../src/secret.js';
import { capture } from '../log/capture.js';
import { heldByGuard, hookClock, MIN, T0 } from './helpers.js';

// A27-states: how the daemon's call alerts report the A2A 0.3 states the document does not list.

const KEY = 'tba_live_ALERTSTATES_51c0';
const REJECT = '+81355550010';
const AUTH = '+81355550011';
const UNKNOWN = '+81355550012';

describe('call alerts and the states the document does not list', () => {
  let emu: RunningA2aEmulator;
  let base: CallAlertConfig;
  beforeAll(async () => {
    emu = await startA2aEmulator({
      port: 0,
      keys: { [KEY]: 'shop-account' },
      scripts: {
        [REJECT]: { connect: { reject: 'calls to this number are blocked' } },
        [AUTH]: { connect: { authRequired: 'the connected agent needs a signed-in user' } },
        [UNKNOWN]: { steps: [{ say: 'Hello?' }, { state: 'unknown', hold: true }] },
      },
    });
    base = alertsConfigSchema.parse({
      call: { to: REJECT, key: { env: 'X' }, base_url: emu.url, allowed_hours: '08:00-20:00', timezone: 'Asia/Tokyo', held_after_minutes: 60 },
    }).call!;
  });
  afterAll(async () => emu.close());

  async function alertTo(to: string, dataset: string) {
    const log = capture('info');
    // A clock whose sleeps return at once: the pauses before reopening an `unknown` task cost no real time.
    const alerts = new CallAlerts({ config: { ...base, to }, key: new Secret(KEY), logger: log.logger, clock: hookClock() });
    const placed = await alerts.check([heldByGuard(dataset)], T0);
    await alerts.settled();
    const again = await alerts.check([heldByGuard(dataset)], T0 + 10 * MIN);
    await alerts.close();
    return { log, placed, again };
  }

  it('rejected at once: alert.failed CALL_REJECTED with the reason, never "placed", not rung again that day', async () => {
    const before = emu.emulator.credits;
    const { log, placed, again } = await alertTo(REJECT, 'shop-r');
    expect(placed).toEqual([expect.objectContaining({ dataset: 'shop-r', errorCode: 'CALL_REJECTED' })]);
    expect(again).toEqual([]);
    expect(emu.emulator.credits).toBe(before + 1);
    expect(log.lines().filter((l) => l.event === 'alert.call')).toEqual([]);
    expect(log.lines().filter((l) => l.event === 'alert.failed')).toEqual([
      expect.objectContaining({ dataset: 'shop-r', code: 'CALL_REJECTED', outcome: 'rejected', reason: 'calls to this number are blocked', task_id: placed[0]!.taskId, level: 50 }),
    ]);
  });

  it('auth-required: alert.failed AUTH_REQUIRED naming alerts.call.key, the task canceled, nothing answered or retried', async () => {
    const before = emu.emulator.credits;
    const { log, placed, again } = await alertTo(AUTH, 'shop-a');
    expect(again).toEqual([]);
    expect(emu.emulator.credits).toBe(before + 1);
    const failed = log.lines().filter((l) => l.event === 'alert.failed');
    expect(failed).toEqual([expect.objectContaining({ dataset: 'shop-a', code: 'AUTH_REQUIRED', outcome: 'auth-required', setting: 'alerts.call.key', level: 50 })]);
    const task = emu.emulator.task(String(failed[0]!.task_id))!;
    expect(task.state).toBe('canceled');
    expect(task.answers).toEqual([]);
    // Accepted (submitted) first, so the alert was placed; it ended needing the operator.
    expect(placed[0]!.taskId).toBe(task.id);
    expect(log.raw()).not.toContain('ALERTSTATES');
  });

  it('unknown: placed, then ends as outcome unknown (a warning), and is not placed again', async () => {
    const before = emu.emulator.credits;
    const { log, placed, again } = await alertTo(UNKNOWN, 'shop-u');
    expect(again).toEqual([]);
    expect(emu.emulator.credits).toBe(before + 1);
    const calls = log.lines().filter((l) => l.event === 'alert.call');
    expect(calls.map((l) => [l.outcome, l.level])).toEqual([
      ['placed', 30],
      ['unknown', 40],
    ]);
    expect(calls[1]!.task_id).toBe(placed[0]!.taskId);
  });
});
