import { schedule as cronSchedule } from 'node-cron';
import type { ScheduleConfig } from './config.js';

/** A started cron job. */
export interface CronHandle {
  stop(): void;
  /** Next planned run, when known. */
  nextRun(): Date | null;
}

/**
 * Starts a cron job. The default is node-cron; tests pass their own to fire
 * schedules by hand instead of waiting for the wall clock.
 */
export type CronStarter = (expression: string, timezone: string, fire: () => void) => CronHandle;

/** node-cron, with overlapping runs of one schedule skipped. */
export const nodeCronStarter: CronStarter = (expression, timezone, fire) => {
  const task = cronSchedule(expression, () => fire(), { timezone, noOverlap: true });
  return {
    stop: () => void task.destroy(),
    nextRun: () => task.getNextRun(),
  };
};

/** A schedule as the daemon names it in logs. */
export interface NamedSchedule {
  name: string;
  config: ScheduleConfig;
}

/** Names of a dataset's schedules: the configured name, else `<type>-<position>`. */
export function nameSchedules(schedules: readonly ScheduleConfig[]): NamedSchedule[] {
  return schedules.map((config, i) => ({ name: config.name ?? `${config.type}-${i + 1}`, config }));
}

/**
 * The cron jobs of one dataset. Firing only hands the schedule on; what it
 * does (enqueue a file, reconcile, check drafts) is the dataset runtime's.
 */
export class DatasetScheduler {
  readonly #handles: Array<{ name: string; handle: CronHandle }> = [];

  constructor(
    readonly schedules: readonly NamedSchedule[],
    readonly timezone: string,
    readonly fire: (s: NamedSchedule) => void,
    readonly starter: CronStarter = nodeCronStarter,
  ) {}

  /** Start every schedule. */
  start(): void {
    for (const s of this.schedules) {
      const handle = this.starter(s.config.cron, s.config.timezone ?? this.timezone, () => this.fire(s));
      this.#handles.push({ name: s.name, handle });
    }
  }

  /** Next run of each schedule, for status and logs. */
  nextRuns(): Array<{ name: string; next: Date | null }> {
    return this.#handles.map((h) => ({ name: h.name, next: h.handle.nextRun() }));
  }

  /** Stop every schedule (a run in progress is the queue's to finish). */
  stop(): void {
    for (const h of this.#handles.splice(0)) h.handle.stop();
  }
}
