import { readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { chain, headOffice } from './fan-out-helpers.js';
import { capture, daemonFixture, drop, events, ManualClock, waitEvent } from './service-harness.js';
import { statusOf } from './status-of.js';

/**
 * Issue 13's fan-out: a shared export's file every store is done with, that cannot be moved to processed/ (a
 * plain file in the way, a folder the service user may not write), was tried again only when another file came.
 * It is tried again on a back-off (doubling, capped), the log naming the file, the error, what to do and when
 * the next try is; no store syncs it again.
 */
describe('daemon: a shared export\'s file that cannot be archived is tried again on a back-off', () => {
  const fx = daemonFixture();
  afterEach(() => fx.emu.emulator.faults.clear());

  it('processed/ blocked: dispose_failed with the retry time, 30 s then 60 s; unblocked, the next try moves it; each store synced it once', async () => {
    const c = await chain(fx.emu, 'arch1');
    await writeFile(join(c.inbox, 'processed'), 'not a folder');
    const log = capture();
    const timers = new ManualClock();
    const service = await Service.start({ configPath: c.configPath, logger: log.logger, env: c.env, clock: timers });
    fx.services.push(service);
    const file = await drop(c.inbox, 'stock-1.csv', headOffice(() => 4));
    const failed = await waitEvent(log.lines, 'file.dispose_failed', { file });
    expect(failed).toMatchObject({ fate: 'processed', code: expect.stringMatching(/^E[A-Z]+$/), retry_in_ms: 30_000, hint: expect.stringContaining('ReadWritePaths') });
    expect(String(failed.msg)).toContain('tried again in 30 s');
    await service.idle();
    const writes = fx.emu.emulator.requests.filter((r) => r.method !== 'GET').length;
    expect(timers.labels().filter((l) => l === 'archive-retry')).toHaveLength(1);
    // `status` of every store names the file that stays in the shared folder, and what to do.
    for (const store of ['store-001', 'store-002', 'store-003']) {
      expect(await statusOf(c.configPath, store)).toContain(`: ${file} stays in its folder since `);
      expect(await statusOf(c.configPath, store)).toContain(`(DISPOSE_FAILED): cannot move ${file} to ${join(c.inbox, 'processed')} (`);
    }

    // Still blocked: the next try says so, and waits twice as long.
    expect(timers.fire('archive-retry')).toBe(1);
    expect(await waitEvent(log.lines, 'file.dispose_failed', { file }, 2)).toMatchObject({ retry_in_ms: 60_000 });
    await service.idle();
    expect(timers.labels().filter((l) => l === 'archive-retry')).toHaveLength(1);

    await rm(join(c.inbox, 'processed'));
    expect(timers.fire('archive-retry')).toBe(1);
    await waitEvent(log.lines, 'file.processed', { file });
    await service.idle();
    expect((await readdir(join(c.inbox, 'processed'))).length).toBe(1);
    expect(timers.labels()).not.toContain('archive-retry');
    for (const store of ['store-001', 'store-002', 'store-003']) expect(await statusOf(c.configPath, store)).not.toContain('DISPOSE_FAILED');
    // Taken once by each store: the tries moved the file, nothing was sent again.
    expect(events(log.lines, 'sync.summary').map((e) => `${e.dataset}: ${e.result}`).sort()).toEqual(['store-001: published', 'store-002: published', 'store-003: published']);
    expect(fx.emu.emulator.requests.filter((r) => r.method !== 'GET').length).toBe(writes);
  });
});
