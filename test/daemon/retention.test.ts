import { mkdir, readdir, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { Service } from '../../src/daemon/service.js';
import { isArchivedName } from '../../src/files/archive.js';
import { capture, daemonFixture, drop, events, exportCsv, serviceScenario, waitEvent } from './service-harness.js';

const DAY = 86_400_000;

async function aged(path: string, ageMs: number, now = Date.now()): Promise<void> {
  await writeFile(path, 'sku\n');
  await utimes(path, (now - ageMs) / 1000, (now - ageMs) / 1000);
}

// Processed/ and failed/ do not grow without limit.
describe('daemon: archived files are kept for watch.retention_days', () => {
  const fx = daemonFixture();

  it('knows the names it archives under', () => {
    for (const n of ['stock.20240412-031500.csv', 'stock.20240412-031500-2.csv', 'stock.20240412-031500.superseded.csv', 'stock.20240412-031500.rejected.csv', 'README.20240412-031500']) {
      expect(isArchivedName(n), n).toBe(true);
    }
    for (const n of ['stock.csv', 'notes.txt', '2024-04-12.csv']) expect(isArchivedName(n), n).toBe(false);
  });

  it('deletes archived files older than retention_days at start and after later syncs, keeping newer ones and files it did not write', async () => {
    const s = await serviceScenario(fx.emu, 'retention');
    const processed = join(s.inbox, 'processed');
    const failed = join(s.inbox, 'failed');
    await mkdir(processed);
    await mkdir(failed);
    await aged(join(processed, 'stock.20240101-000000.csv'), 40 * DAY);
    await aged(join(processed, 'stock.20240301-000000.superseded.csv'), 31 * DAY);
    await aged(join(processed, 'stock.20240402-000000.csv'), 5 * DAY);
    await aged(join(processed, 'notes.txt'), 400 * DAY);
    await aged(join(failed, 'stock.20240101-000000.csv'), 40 * DAY);
    await aged(join(failed, 'stock.20240101-000000.rejected.csv'), 40 * DAY);
    const watch = { path: s.inbox, include: ['*.csv'], settle_ms: 100, poll_interval_ms: 30, retention_days: 30 };
    await s.writeConfig({ shop: s.dataset({ watch }) });
    const log = capture();
    // The daemon's clock, moved on by hand: later prunes are at most hourly.
    let offsetMs = 0;
    const clock = { ...systemClock, now: () => Date.now() + offsetMs };
    const service = await Service.start({ configPath: s.configPath, logger: log.logger, env: s.env, clock });
    try {
      expect(events(log.lines, 'file.pruned')).toEqual([
        expect.objectContaining({ dir: processed, deleted: 2, retention_days: 30 }),
        expect.objectContaining({ dir: failed, deleted: 2, retention_days: 30 }),
      ]);
      expect((await readdir(processed)).sort()).toEqual(['notes.txt', 'stock.20240402-000000.csv']);
      expect(await readdir(failed)).toEqual([]);

      // 26 days on, the 5-day-old file is 31 days old; the export archived now is not.
      offsetMs = 26 * DAY;
      await drop(s.inbox, 'new.csv', exportCsv(2));
      await waitEvent(log.lines, 'file.pruned', { dir: processed }, 2);
      const left = (await readdir(processed)).sort();
      expect(left).toHaveLength(2);
      expect(left[0]).toMatch(/^new\.\d{8}-\d{6}\.csv$/);
      expect(left[1]).toBe('notes.txt');
    } finally {
      await service.stop();
    }
  });
});
