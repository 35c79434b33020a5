import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { emulatorFixture, exportCsv, scenario } from './harness.js';

describe('daemon end to end: schedules, reload, stop', () => {
  const fx = emulatorFixture();

  it('per-second schedules: a reread syncs a fixed file then skips it while unchanged; a reconcile sees a portal edit', async () => {
    const s = await scenario(fx.emu, 'e2e-schedule');
    const fixed = join(s.dir, 'fixed.csv');
    await writeFile(fixed, exportCsv(5));
    const { watch: _none, ...ds } = s.dataset({
      schedules: [
        { type: 'reread', cron: '* * * * * *', path: fixed },
        { type: 'reconcile', cron: '*/2 * * * * *' },
      ],
    });
    await s.writeConfig({ shop: ds });
    const d = s.start();
    try {
      await d.waitFor('schedule.fired', { schedule: 'reread-1' });
      expect(await d.waitFor('sync.summary')).toMatchObject({ file: fixed, result: 'published', adds: 5 });
      await d.waitFor('file.skipped', { reason: 'same_content', origin: 'reread' });
      expect(fx.emu.emulator.records('e2e-schedule')).toHaveLength(5);
      expect(await readdir(s.dir)).toContain('fixed.csv');
      fx.emu.emulator.portalPublish('e2e-schedule', { delete: ['P-0001'] });
      await d.waitFor('reconcile.done', { removed: 1 });
    } finally {
      expect(await d.stop()).toBe(0);
    }
  });

  it('SIGHUP adds a dataset from a good config and keeps the old one on a bad config', async () => {
    const a = await scenario(fx.emu, 'e2e-reload-a');
    const b = await scenario(fx.emu, 'e2e-reload-b');
    // One process serves both; b's key travels in a's environment.
    Object.assign(a.env, b.env);
    await a.writeConfig({ a: a.dataset() });
    const d = a.start();
    try {
      await d.waitFor('daemon.started');
      await a.writeConfig({ a: a.dataset(), b: b.dataset() });
      d.child.kill('SIGHUP');
      const reloaded = await d.waitFor('config.reloaded', { msg: 'config reloaded' });
      expect(reloaded.added).toEqual(['b']);
      await writeFile(join(b.inbox, 'b.csv'), exportCsv(3));
      await d.waitFor('sync.summary', { dataset: 'b', result: 'published' });

      await writeFile(a.configPath, 'datasets:\n  a:\n    api: {base_url: nope}\n    surprise: true\n');
      d.child.kill('SIGHUP');
      const rejected = await d.waitFor('config.rejected');
      expect(rejected.issues).toBeInstanceOf(Array);
      await writeFile(join(a.inbox, 'a.csv'), exportCsv(4));
      await d.waitFor('sync.summary', { dataset: 'a', result: 'published' });
      expect(fx.emu.emulator.records('e2e-reload-a')).toHaveLength(4);
      expect(fx.emu.emulator.records('e2e-reload-b')).toHaveLength(3);
    } finally {
      expect(await d.stop()).toBe(0);
    }
  });

  it('SIGTERM during a sync stops it at the next journaled step; a restart finishes it, nothing lost and nothing sent twice', async () => {
    const s = await scenario(fx.emu, 'e2e-stop');
    await s.writeConfig({ shop: s.dataset() });
    const writesBefore = fx.emu.emulator.counters.recordWrites;
    // Few enough records for the per-record path (its cost estimate beats a replace job);
    // slow writes keep the sync running while the signal arrives.
    const N = 15;
    fx.emu.emulator.faults.add({ method: 'POST', path: /\/records$/, delayMs: 60, count: Infinity });
    const d = s.start();
    await d.waitFor('daemon.started');
    await writeFile(join(s.inbox, 'stock.csv'), exportCsv(N));
    await d.waitFor('sync.planned');
    for (const deadline = Date.now() + 20_000; fx.emu.emulator.counters.recordWrites < writesBefore + 3; ) {
      if (Date.now() > deadline) throw new Error('the sync never started writing');
      await new Promise((r) => setTimeout(r, 20));
    }
    d.child.kill('SIGTERM');
    expect(await d.exited).toBe(0);
    fx.emu.emulator.faults.clear();
    const stopping = d.lines.findIndex((l) => l.event === 'daemon.stopping');
    const summary = d.lines.findIndex((l) => l.event === 'sync.summary');
    expect(stopping).toBeGreaterThan(-1);
    expect(summary).toBeGreaterThan(stopping);
    // The stop does not wait for the whole sync, only for the request in flight.
    expect(d.lines[summary]).toMatchObject({ result: 'interrupted', code: 'INTERRUPTED' });
    expect(fx.emu.emulator.records('e2e-stop').length).toBeLessThan(N);
    expect(await readdir(s.inbox)).toContain('stock.csv');
    expect(d.events('sync.retry_scheduled')).toEqual([]);

    const again = s.start();
    try {
      await again.waitFor('daemon.started');
      await again.waitFor('sync.resumed');
      await again.waitFor('file.processed');
      expect(fx.emu.emulator.records('e2e-stop')).toHaveLength(N);
      // Every record written exactly once, across the stop and the restart.
      expect(fx.emu.emulator.counters.recordWrites - writesBefore).toBe(N);
      const posts = fx.emu.emulator.requests.filter((r) => r.method === 'POST' && /e2e-stop\/records$/.test(r.path));
      expect(posts).toHaveLength(N);
      expect(await readdir(join(s.inbox, 'processed'))).toHaveLength(1);
    } finally {
      expect(await again.stop()).toBe(0);
    }
  });
});
