import { describe, expect, it } from 'vitest';
import { schedulesConfigSchema } from '../../src/config/schedules.js';
import {
  DatasetScheduler,
  nameSchedules,
  nodeCronStarter,
  type CronStarter,
  type NamedSchedule,
} from '../../src/triggers/scheduler.js';

describe('schedules config', () => {
  it('parses each type with its defaults', () => {
    const s = schedulesConfigSchema.parse([
      { type: 'reread', cron: '*/5 * * * *', path: '/srv/pos/stock.csv' },
      { type: 'command', cron: '0 3 * * *', command: ['/opt/pos/export'] },
      { type: 'reconcile', cron: '0 4 * * *', timezone: 'Asia/Tokyo' },
      { type: 'draft_check', cron: '0 * * * *' },
    ]);
    expect(s[1]).toMatchObject({ timeout_ms: 300_000, max_stderr_bytes: 8192 });
    expect(s[3]).toMatchObject({ warn_before_ms: 4 * 3_600_000 });
    expect(nameSchedules(s).map((n) => n.name)).toEqual(['reread-1', 'command-2', 'reconcile-3', 'draft_check-4']);
  });

  it('refuses bad cron expressions, unknown types and unknown keys', () => {
    expect(schedulesConfigSchema.safeParse([{ type: 'reconcile', cron: '61 * * * *' }]).success).toBe(false);
    expect(schedulesConfigSchema.safeParse([{ type: 'rsync', cron: '0 * * * *' }]).success).toBe(false);
    expect(schedulesConfigSchema.safeParse([{ type: 'reconcile', cron: '0 * * * *', every: 5 }]).success).toBe(false);
    expect(schedulesConfigSchema.safeParse([{ type: 'command', cron: '0 * * * *', command: [] }]).success).toBe(false);
  });
});

describe('dataset scheduler', () => {
  it('starts each schedule in its zone and fires it through the injected tick source', () => {
    const started: Array<{ expr: string; tz: string; fire: () => void; stopped: boolean }> = [];
    const starter: CronStarter = (expr, tz, fire) => {
      const h = { expr, tz, fire, stopped: false };
      started.push(h);
      return { stop: () => void (h.stopped = true), nextRun: () => null };
    };
    const fired: string[] = [];
    const named = nameSchedules(
      schedulesConfigSchema.parse([
        { type: 'reconcile', cron: '0 4 * * *', name: 'nightly' },
        { type: 'draft_check', cron: '0 * * * *', timezone: 'Europe/Paris' },
      ]),
    );
    const s = new DatasetScheduler(named, 'Asia/Tokyo', (n: NamedSchedule) => void fired.push(n.name), starter);
    s.start();
    expect(started.map((h) => [h.expr, h.tz])).toEqual([
      ['0 4 * * *', 'Asia/Tokyo'],
      ['0 * * * *', 'Europe/Paris'],
    ]);
    started[1]!.fire();
    started[0]!.fire();
    expect(fired).toEqual(['draft_check-2', 'nightly']);
    s.stop();
    expect(started.every((h) => h.stopped)).toBe(true);
  });

  it('skips a schedule whose last run has not ended, and stop waits for that run', async () => {
    let tick!: () => void;
    const starter: CronStarter = (_e, _tz, fire) => {
      tick = fire;
      return { stop: () => undefined, nextRun: () => null };
    };
    let release!: () => void;
    const runs: string[] = [];
    const skipped: string[] = [];
    const named = nameSchedules(schedulesConfigSchema.parse([{ type: 'reconcile', cron: '* * * * *' }]));
    const s = new DatasetScheduler(
      named,
      'UTC',
      (n) => {
        runs.push(n.name);
        return new Promise<void>((r) => (release = r));
      },
      starter,
      (n) => skipped.push(n.name),
    );
    s.start();
    tick();
    tick();
    expect(runs).toEqual(['reconcile-1']);
    expect(skipped).toEqual(['reconcile-1']);
    let stopped = false;
    const stopping = s.stop().then(() => (stopped = true));
    // Let every pending callback and promise run: stop() must still wait for the running job.
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(stopped).toBe(true);
  });

  it('node-cron fires a per-second schedule', async () => {
    let fire!: () => void;
    const fired = new Promise<void>((r) => (fire = r));
    const h = nodeCronStarter('* * * * * *', 'UTC', () => fire());
    expect(h.nextRun()).toBeInstanceOf(Date);
    await fired;
    h.stop();
  });
});
