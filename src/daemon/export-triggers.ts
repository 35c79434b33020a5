import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { ExportConfig } from '../config/exports.js';
import type { ReadyFile } from '../files/ready-file.js';
import { event } from '../log/events.js';
import type { DatasetJob } from '../triggers/queue.js';
import { DatasetScheduler, nameSchedules, nodeCronStarterWith, type CronStarter } from '../triggers/scheduler.js';
import { FolderWatcher } from '../triggers/watcher.js';
import type { HealthState } from './health-state.js';
import type { DaemonState } from './ports.js';
import { runSchedule } from './schedule-actions.js';
import { WatchSupervisor } from './watch-supervisor.js';

/** What a shared export's triggers need. */
export interface ExportTriggerDeps {
  /** The export's /healthz name (exportHealthName). */
  health: string;
  logger: Logger;
  healthState: HealthState;
  clock: Clock;
  /** The configuration's timezone now (a reload may change it). */
  timezone(): string;
  state: DaemonState;
  tmpDir: string;
  cronStarter?: CronStarter;
  /** A file the watch or a schedule hands on, or a schedule's other job, for the export's queue. */
  push(job: DatasetJob): boolean;
  /** A file the watcher superseded: archived as such. */
  archive(file: ReadyFile): void;
}

/**
 * The triggers of one shared export (issue 13's fan-out): ONE watcher, which
 * hands on every file (which one a taker skips is each taker's own,
 * fan-out-plan.ts), and ONE set of schedules.
 */
export class ExportTriggers {
  readonly #deps: ExportTriggerDeps;
  #watch: WatchSupervisor | undefined;
  #scheduler: { s: DatasetScheduler; abort: AbortController } | undefined;

  constructor(deps: ExportTriggerDeps) {
    this.#deps = deps;
  }

  /** The watched folder, or null. */
  get watchDir(): string | null {
    return this.#watch?.dir ?? null;
  }

  get scheduleCount(): number {
    return this.#scheduler?.s.schedules.length ?? 0;
  }

  async start(cfg: ExportConfig): Promise<void> {
    const d = this.#deps;
    if (cfg.watch) {
      this.#watch = new WatchSupervisor(
        cfg.watch,
        { onReady: (file) => void d.push({ kind: 'file', file, origin: 'watch' }), onSuperseded: (file) => d.archive(file) },
        { dataset: d.health, logger: d.logger, health: d.healthState, clock: d.clock, keepAll: true },
      );
      await this.#watch.start();
    }
    if (cfg.schedules.length > 0) {
      const abort = new AbortController();
      const s = new DatasetScheduler(
        nameSchedules(cfg.schedules),
        d.timezone(),
        (sched) => {
          d.logger.info(event('schedule.fired', { schedule: sched.name, type: sched.config.type }), 'schedule fired');
          return runSchedule({ name: d.health, source: cfg.source }, sched, {
            signal: abort.signal,
            push: (job) => d.push(job),
            state: d.state,
            health: d.healthState,
            logger: d.logger,
            clock: d.clock,
            tmpDir: d.tmpDir,
          });
        },
        d.cronStarter ?? nodeCronStarterWith(d.logger),
        (sched) => d.logger.warn(event('schedule.skipped', { schedule: sched.name, reason: 'still_running' }), 'schedule skipped: its last run has not ended'),
      );
      s.start();
      this.#scheduler = { s, abort };
    }
  }

  async stop(): Promise<void> {
    this.#scheduler?.abort.abort();
    await this.#scheduler?.s.stop();
    this.#scheduler = undefined;
    await this.#watch?.close();
    this.#watch = undefined;
  }

  /** A watch that is not running (its folder was missing) is tried again now (a reload). */
  async restartIfFailed(): Promise<void> {
    await this.#watch?.restartIfFailed();
  }
}

/**
 * The files waiting in an export's folder now, newest first (FolderWatcher.waiting). `watching`: the daemon
 * watches the folder too, and its watcher says what it leaves (a young 0-byte file, a folder it cannot read);
 * else (`run --once`) this says it.
 */
export async function exportFilesWaiting(cfg: ExportConfig, d: { logger: Logger; clock: Clock }, watching: boolean): Promise<ReadyFile[]> {
  if (!cfg.watch) return [];
  const watch = cfg.watch;
  return new FolderWatcher(watch, { onReady: () => undefined, onSuperseded: () => undefined }, { ...(watching ? {} : { logger: d.logger }), clock: d.clock }).waiting().catch((err: unknown) => {
    if (!watching) d.logger.error(event('watch.failed', { watch: watch.path, code: 'WATCH_FAILED', errno: (err as NodeJS.ErrnoException).code ?? null }), 'cannot read the export folder');
    return [] as ReadyFile[];
  });
}
