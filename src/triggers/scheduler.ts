import { schedule as cronSchedule } from 'node-cron';
import type { Logger } from 'pino';
import type { ScheduleConfig } from '../config/schedules.js';
import { event } from '../log/events.js';

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

/**
 * node-cron, its messages sent to `logger` (by default it writes coloured
 * lines to stdout, which would break the JSON log). Overlapping runs are the
 * DatasetScheduler's to skip, so the tick never waits.
 */
export function nodeCronStarterWith(logger?: Logger): CronStarter {
  const say = (level: 'debug' | 'warn' | 'error') => (message: unknown, err?: unknown) =>
    logger?.[level](event('schedule.warning', { message: String(message instanceof Error ? message.message : message), err }), 'cron library message');
  const cronLogger = { info: say('debug'), debug: say('debug'), warn: say('debug'), error: say('error') };
  return (expression, timezone, fire) => {
    const task = cronSchedule(expression, () => fire(), { timezone, logger: cronLogger });
    return {
      stop: () => void task.destroy(),
      nextRun: () => task.getNextRun(),
    };
  };
}

/** node-cron with its messages dropped. */
export const nodeCronStarter: CronStarter = nodeCronStarterWith();

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
 * does (enqueue a file, reconcile, check drafts) is the dataset runtime's. A
 * schedule whose previous run has not ended is skipped (`skipped` says so).
 */
export class DatasetScheduler {
  readonly #handles: Array<{ name: string; handle: CronHandle }> = [];
  readonly #running = new Map<string, Promise<void>>();

  constructor(
    readonly schedules: readonly NamedSchedule[],
    readonly timezone: string,
    readonly fire: (s: NamedSchedule) => void | Promise<void>,
    readonly starter: CronStarter = nodeCronStarter,
    readonly skipped: (s: NamedSchedule) => void = () => undefined,
  ) {}

  /** Start every schedule. */
  start(): void {
    for (const s of this.schedules) {
      const handle = this.starter(s.config.cron, s.config.timezone ?? this.timezone, () => this.#tick(s));
      this.#handles.push({ name: s.name, handle });
    }
  }

  /** Next run of each schedule, for status and logs. */
  nextRuns(): Array<{ name: string; next: Date | null }> {
    return this.#handles.map((h) => ({ name: h.name, next: h.handle.nextRun() }));
  }

  /** Stop every schedule, then wait for the runs in progress (the owner aborts them first). */
  async stop(): Promise<void> {
    for (const h of this.#handles.splice(0)) h.handle.stop();
    await Promise.all(this.#running.values());
  }

  #tick(s: NamedSchedule): void {
    if (this.#running.has(s.name)) {
      this.skipped(s);
      return;
    }
    const run = (async () => {
      try {
        await this.fire(s);
      } catch {
        // fire reports its own failures.
      } finally {
        this.#running.delete(s.name);
      }
    })();
    this.#running.set(s.name, run);
  }
}
