import { getTasks } from 'node-cron';
import { describe, expect, it } from 'vitest';
import { scheduleConfigSchema } from '../../src/config/schedules.js';
import { nextScheduledRuns } from '../../src/triggers/next-runs.js';

/** Hour and minute of an instant in a time zone. */
function wallTime(iso: string, timeZone: string): { hour: number; minute: number } {
  const parts = new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).formatToParts(new Date(iso));
  return { hour: Number(parts.find((p) => p.type === 'hour')!.value), minute: Number(parts.find((p) => p.type === 'minute')!.value) };
}

describe('nextScheduledRuns (status: next scheduled run from the config)', () => {
  it('gives each schedule its next run in its time zone (the top-level one by default), soonest first, and leaves no task behind', async () => {
    const schedules = [
      scheduleConfigSchema.parse({ type: 'reconcile', cron: '0 3 * * *' }),
      scheduleConfigSchema.parse({ type: 'reread', name: 'hourly', cron: '15 * * * *', timezone: 'UTC', path: '/srv/export.csv' }),
    ];
    const before = Date.now();
    const runs = await nextScheduledRuns(schedules, 'Asia/Tokyo');
    expect(runs.map((r) => `${r.name} ${r.type} ${r.timezone}`).sort()).toEqual(['hourly reread UTC', 'reconcile-1 reconcile Asia/Tokyo']);
    const byName = Object.fromEntries(runs.map((r) => [r.name, r]));
    const hourly = Date.parse(byName.hourly!.next!);
    const daily = Date.parse(byName['reconcile-1']!.next!);
    expect(hourly).toBeGreaterThan(before);
    expect(hourly - before).toBeLessThanOrEqual(3_600_000);
    expect(wallTime(byName.hourly!.next!, 'UTC').minute).toBe(15);
    expect(daily).toBeGreaterThan(before);
    expect(daily - before).toBeLessThanOrEqual(86_400_000);
    expect(wallTime(byName['reconcile-1']!.next!, 'Asia/Tokyo')).toEqual({ hour: 3, minute: 0 });
    expect(runs.map((r) => r.next)).toEqual([...runs.map((r) => r.next)].sort());
    expect(getTasks().size).toBe(0);
  });

  it('no schedules: nothing', async () => {
    expect(await nextScheduledRuns([], 'UTC')).toEqual([]);
  });
});
