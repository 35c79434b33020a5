import { createTask } from 'node-cron';
import type { ScheduleConfig } from '../config/schedules.js';
import { nameSchedules } from './scheduler.js';

/** One schedule of a dataset with its next run. */
export interface ScheduledRun {
  name: string;
  type: ScheduleConfig['type'];
  cron: string;
  timezone: string;
  /** ISO time of the next run; null when the expression never matches again. */
  next: string | null;
}

/**
 * The next run of each of a dataset's schedules, from the configuration
 * (cron + timezone, the top-level one by default), soonest first: what the
 * daemon's scheduler will fire next, for `status` without asking the daemon.
 * node-cron 4 computes it (a task that is created but never started, so no
 * timer runs); it counts from the wall clock, as the daemon does.
 */
export async function nextScheduledRuns(schedules: readonly ScheduleConfig[], defaultTimezone: string): Promise<ScheduledRun[]> {
  const out: ScheduledRun[] = [];
  for (const { name, config } of nameSchedules(schedules)) {
    const timezone = config.timezone ?? defaultTimezone;
    out.push({ name, type: config.type, cron: config.cron, timezone, next: await nextRun(config.cron, timezone) });
  }
  return out.sort((a, b) => (a.next ?? '~').localeCompare(b.next ?? '~'));
}

async function nextRun(cron: string, timezone: string): Promise<string | null> {
  let task: ReturnType<typeof createTask>;
  try {
    task = createTask(cron, () => undefined, { timezone });
  } catch {
    return null; // an expression node-cron cannot place (config validation refuses these)
  }
  try {
    const [next] = task.getNextRuns(1);
    return next && !Number.isNaN(next.getTime()) ? next.toISOString() : null;
  } finally {
    await task.destroy();
  }
}
