import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Service } from '../../src/daemon/service.js';
import { chain, headOffice } from './fan-out-helpers.js';
import { capture, daemonFixture, drop, events, ManualClock, until, waitEvent } from './service-harness.js';

// Review rv13c of issue 13 (defects found, committed as it.fails until fixed).

/** A ManualClock whose long sleeps (over a minute) are recorded and end only when the test says so (no real wait). */
class HeldSleeps extends ManualClock {
  readonly sleeps: Array<{ ms: number; end: () => void }> = [];
  override sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (ms <= 60_000) return super.sleep(ms, signal);
    return new Promise((resolve) => this.sleeps.push({ ms, end: resolve }));
  }
  endAll(): void {
    for (const s of this.sleeps.splice(0)) s.end();
  }
}

describe('review rv13c: a shared export (issue 13)', () => {
  const fx = daemonFixture();
  afterEach(() => fx.emu.emulator.faults.clear());

  // D1: the start-up look at a shared export's folder (ExportRuntime.start -> #takeWaiting -> FolderWatcher.waiting)
  // sleeps until each file's mtime + settle_ms. A file whose mtime is ahead of this machine's clock (the exporting
  // machine's clock ahead, a share with a skewed clock) makes Service.start wait for that long: hours ahead, the
  // daemon never starts (no /healthz, no other dataset or export runs, SIGTERM does not stop it). A dataset's own
  // watched folder takes such a file at once. Found with `run` and stock-3.csv touched 2 days ahead.
  it('a file in the export folder with a modification time in the future does not hold the daemon\'s start', async () => {
    const c = await chain(fx.emu, 'rv13c1');
    await drop(c.inbox, 'stock-1.csv', headOffice(() => 4), Date.now() + 2 * 3600_000);
    const clock = new HeldSleeps();
    const log = capture();
    let started: Service | undefined;
    const start = Service.start({ configPath: c.configPath, logger: log.logger, env: c.env, clock }).then((s) => (started = s));
    try {
      // Either it starts, or it asks the clock for a wait as long as the file is ahead.
      await until(async () => started !== undefined || clock.sleeps.some((s) => s.ms > 60_000), 'started, or waiting on the file time', log.lines);
      expect(clock.sleeps.filter((s) => s.ms > 60_000).map((s) => s.ms)).toEqual([]);
      expect(started).toBeDefined();
    } finally {
      clock.endAll();
      await start;
      await started?.stop();
    }
  });

  // D2: a file every store is done with that cannot be archived is tried twice in the same pass (#pass archives after
  // the take, then again after the loop): two file.dispose_failed error lines 20 ms apart, the first saying "tried
  // again in 30 s" while the retry actually set is the second's 60 s (the back-off already doubled once).
  it('processed/ blocked: one dispose_failed line for the file, and the retry it announces (30 s) is the one set', async () => {
    const c = await chain(fx.emu, 'rv13c2');
    await writeFile(join(c.inbox, 'processed'), 'not a folder');
    const log = capture();
    const timers = new ManualClock();
    const service = await Service.start({ configPath: c.configPath, logger: log.logger, env: c.env, clock: timers });
    fx.services.push(service);
    const file = await drop(c.inbox, 'stock-1.csv', headOffice(() => 4));
    const failed = await waitEvent(log.lines, 'file.dispose_failed', { file });
    expect(failed.retry_in_ms).toBe(30_000);
    await service.idle();
    expect(events(log.lines, 'file.dispose_failed', { file }).map((e) => e.retry_in_ms)).toEqual([30_000]);
    expect(timers.pending.filter((t) => t.label === 'archive-retry').map((t) => t.ms)).toEqual([30_000]);
  });
});
