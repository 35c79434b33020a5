import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { A2aClient } from '../../src/a2a/client.js';
import { alertsConfigSchema, alertStatus, CallAlerts, callAlertsFromConfig, type CallAlertConfig } from '../../src/alerts/alerts.js';
import { Secret } from '../../src/secret.js';
import type { RunningA2aEmulator } from '../../src/emulator/a2a/server.js';
import { startA2aEmulator } from '../../src/emulator/a2a/server.js';
import { capture } from '../log/capture.js';
import { heldByGuard, MIN, T0 } from './helpers.js';

const CANARY = 'tba_live_ALERTCANARY_93ac';
const ALERT_TO = '+81355550000';
const FAILING_TO = '+81355550001';

const heldGuard = heldByGuard();

describe('CallAlerts against the emulator', () => {
  let emu: RunningA2aEmulator;
  let dir: string;
  let config: CallAlertConfig;

  beforeAll(async () => {
    emu = await startA2aEmulator({
      port: 0,
      keys: { [CANARY]: 'shop-account' },
      scripts: {
        [ALERT_TO]: { steps: [{ say: 'Hello?' }, { ask: 'They ask whether I can approve it now. What should I say?' }, { end: 'completed', say: 'Understood.' }] },
        [FAILING_TO]: { connect: { fail: 'no answer' } },
      },
    });
    dir = await mkdtemp(join(tmpdir(), 'alerts-'));
    config = alertsConfigSchema.parse({
      call: { to: ALERT_TO, key: { env: 'X' }, base_url: emu.url, allowed_hours: '08:00-20:00', timezone: 'Asia/Tokyo', held_after_minutes: 60 },
    }).call!;
  });
  afterAll(async () => {
    await emu.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('fires once for a held guard, logs task id and outcome, never approves, and not again within its window', async () => {
    const log = capture('info');
    const historyPath = join(dir, 'alerts.json');
    const alerts = new CallAlerts({ config, key: new Secret(CANARY), logger: log.logger, historyPath });
    const placed = await alerts.check([heldGuard], T0);
    expect(placed).toHaveLength(1);
    expect(placed[0]!.taskId).toMatch(/^task-/);
    await alerts.settled();
    expect(emu.emulator.credits).toBe(1);

    const call = emu.emulator.calls[0]!;
    expect(call.to).toBe(ALERT_TO);
    expect(call.goal).toContain('dataset-connector approve shop-1');
    const task = emu.emulator.task(call.taskId)!;
    expect(task.state).toBe('completed');
    expect(task.answers).toHaveLength(1);
    expect(task.answers[0]).not.toMatch(/\bapproved?\b/i);

    const events = log.lines().filter((l) => l.event === 'alert.call');
    expect(events.map((e) => [e.task_id, e.outcome])).toEqual([
      [call.taskId, 'placed'],
      [call.taskId, 'completed'],
    ]);
    expect(events[0]).toMatchObject({ dataset: 'shop-1', kind: 'held' });

    // Ten minutes and eight hours later: still held, still inside the allowed hours, but within the day.
    expect(await alerts.check([heldGuard], T0 + 10 * MIN)).toEqual([]);
    expect(await alerts.check([heldGuard], T0 + 8 * 60 * MIN)).toEqual([]);
    await alerts.close();
    expect(emu.emulator.credits).toBe(1);

    // A restarted daemon reads the history file and does not ring again either.
    expect(JSON.parse(await readFile(historyPath, 'utf8')).calls['shop-1']).toEqual([T0]);
    const again = new CallAlerts({ config, key: new Secret(CANARY), logger: log.logger, historyPath });
    expect(await again.check([heldGuard], T0 + 60 * MIN)).toEqual([]);
    await again.close();
    expect(emu.emulator.credits).toBe(1);
    expect(log.raw()).not.toContain('ALERTCANARY');
  });

  it('no alert outside the allowed hours; it comes once the hours open', async () => {
    const log = capture('info');
    const alerts = new CallAlerts({ config, key: new Secret(CANARY), logger: log.logger });
    const before = emu.emulator.credits;
    const elevenPmTokyo = Date.UTC(2025, 6, 1, 14, 0);
    const status = { ...heldGuard, held: { ...heldGuard.held!, since: elevenPmTokyo - 120 * MIN } };
    expect(await alerts.check([status], elevenPmTokyo)).toEqual([]);
    expect(await alerts.check([status], elevenPmTokyo + 8 * 60 * MIN)).toEqual([]); // 07:00
    expect(await alerts.check([status], elevenPmTokyo + 9 * 60 * MIN)).toHaveLength(1); // 08:00
    await alerts.close();
    expect(emu.emulator.credits).toBe(before + 1);
  });

  it('a call that cannot start is logged with its task id and the failed outcome', async () => {
    const log = capture('info');
    const client = new A2aClient({ baseUrl: emu.url, key: new Secret(CANARY) });
    const alerts = new CallAlerts({ config: { ...config, to: FAILING_TO }, key: new Secret(CANARY), logger: log.logger, client });
    const placed = await alerts.check([{ ...heldGuard, dataset: 'shop-9' }], T0);
    await alerts.close();
    await client.close();
    const ended = log.lines().filter((l) => l.event === 'alert.call' && l.outcome !== 'placed');
    expect(ended).toEqual([expect.objectContaining({ task_id: placed[0]!.taskId, outcome: 'failed', reason: 'no answer', dataset: 'shop-9' })]);
  });

  it('a refused key is logged as alert.failed and still counts against the day (no second ring)', async () => {
    const log = capture('info');
    const alerts = new CallAlerts({ config, key: new Secret('tba_live_revoked'), logger: log.logger });
    const before = emu.emulator.credits;
    const first = await alerts.check([{ ...heldGuard, dataset: 'shop-7' }], T0);
    expect(first[0]!.errorCode).toBe('UNAUTHORIZED');
    expect(await alerts.check([{ ...heldGuard, dataset: 'shop-7' }], T0 + MIN)).toEqual([]);
    await alerts.close();
    expect(log.lines().filter((l) => l.event === 'alert.failed')).toEqual([expect.objectContaining({ code: 'UNAUTHORIZED', dataset: 'shop-7' })]);
    expect(emu.emulator.credits).toBe(before);
  });

  it('callAlertsFromConfig: off without the section or when disabled; on, it resolves the key and keeps history in state_dir', async () => {
    const log = capture('info');
    const deps = { stateDir: join(dir, 'state'), timezone: 'Asia/Tokyo', logger: log.logger, env: { ALERT_KEY: CANARY } };
    expect(await callAlertsFromConfig(undefined, deps)).toBeUndefined();
    const raw = { call: { to: ALERT_TO, key: { env: 'ALERT_KEY' }, base_url: emu.url } };
    expect(await callAlertsFromConfig(alertsConfigSchema.parse({ call: { ...raw.call, enabled: false } }), deps)).toBeUndefined();
    const alerts = (await callAlertsFromConfig(alertsConfigSchema.parse(raw), deps))!;
    const status = alertStatus('shop-5', null, [{ code: 'UNAUTHORIZED', message: 'key revoked', since: T0 - 120 * MIN }]);
    expect(status.stopped).toMatchObject({ code: 'UNAUTHORIZED' });
    expect(alertStatus('shop-5', null, [{ code: 'GUARD_HELD', since: 0 }]).stopped).toBeNull();
    const placed = await alerts.check([status], T0);
    await alerts.close();
    expect(placed[0]).toMatchObject({ kind: 'stopped', dataset: 'shop-5' });
    expect(emu.emulator.task(placed[0]!.taskId!)!.goal).toContain('dataset-connector doctor');
    expect(JSON.parse(await readFile(join(dir, 'state', 'alerts.json'), 'utf8')).calls['shop-5']).toEqual([T0]);
  });
});
