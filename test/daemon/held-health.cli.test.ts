import { describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { runCli } from '../sync/cli-child.js';
import { capture, daemonFixture, drop, exportCsv, freePort, healthz, ManualClock, serviceScenario, waitEvent } from './service-harness.js';

/**
 * /healthz says what the state db holds, whoever changed it (issue 11,
 * point 9): the daemon runs here, a person's approve or discard runs as a
 * CLI child process on the same state_dir, and the next /healthz is ok
 * without waiting for a sync or a timer.
 */
describe('daemon: /healthz after approve or discard from the CLI', () => {
  const fx = daemonFixture();

  it('a held change degrades /healthz (held, HELD_GUARD); discard, then approve, from the CLI make it ok at once', async () => {
    const s = await serviceScenario(fx.emu, 'held-health');
    await s.writeConfig({ shop: s.dataset({ policy: { staging: true } }) }, { health: { listen: `127.0.0.1:${await freePort()}` } });
    const log = capture();
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock: new ManualClock() });
    fx.services.push(service);
    const health = () => healthz(service.healthAddress!.port);
    // /metrics reads the held change from the state db too (review of #13): 0 once a person approved or discarded it.
    const held = async () => (await (await fetch(`http://127.0.0.1:${service.healthAddress!.port}/metrics`)).text()).match(/^dataset_connector_held\{dataset="shop"\} (\d+)$/m)?.[1];
    const cli = (...args: string[]) => runCli(['--config', s.configPath, ...args], s.env as Record<string, string>);

    await drop(s.inbox, 'all.csv', exportCsv(10));
    await waitEvent(log.lines, 'sync.summary', { result: 'published' });
    expect(await health()).toMatchObject({ status: 'ok', reasons: [] });
    expect(await held()).toBe('0');

    // 3 of 10 gone: the delete guard (20%) holds it for a person.
    await drop(s.inbox, 'fewer.csv', exportCsv(7));
    await waitEvent(log.lines, 'sync.summary', { result: 'held' });
    expect(await health()).toMatchObject({ status: 'degraded', reasons: [{ dataset: 'shop', topic: 'held', code: 'HELD_GUARD', message: expect.stringContaining('max_delete_ratio') }] });
    expect(await held()).toBe('1');

    const discarded = await cli('discard', 'shop');
    expect(discarded.status, discarded.stderr).toBe(0);
    expect(await health()).toMatchObject({ status: 'ok', reasons: [] });
    expect(await held()).toBe('0');

    await drop(s.inbox, 'fewer-2.csv', exportCsv(7, 3));
    await waitEvent(log.lines, 'sync.summary', { result: 'held' }, 2);
    expect(await health()).toMatchObject({ status: 'degraded', reasons: [{ topic: 'held', code: 'HELD_GUARD' }] });
    expect(await held()).toBe('1');

    const approved = await cli('approve', 'shop');
    expect(approved.status, approved.stderr).toBe(0);
    expect(await health()).toMatchObject({ status: 'ok', reasons: [] });
    expect(await held()).toBe('0');
    expect(fx.emu.emulator.records('held-health')).toHaveLength(7);
  });
});
