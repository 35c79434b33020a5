import type { FileOrigin, ReadyFile } from '../files/ready-file.js';

/** Work for one dataset. A file job carries what to sync; the others are whole-dataset tasks. */
export type DatasetJob =
  | {
      kind: 'file';
      file: ReadyFile;
      origin: FileOrigin;
      /** Called once the job is finished or dropped (e.g. to delete a command's temp output). */
      cleanup?: () => Promise<void>;
      /** A reapply: the content hash the file must still have; it runs only while no export was processed since. */
      reapplyOf?: string;
      /** The feed the file is of (issue 13), when not the dataset's primary feed. */
      feed?: string;
      /**
       * File jobs with the same slot coalesce (the newer replaces the one waiting); absent: the dataset's one
       * slot. A full feed has one slot (its newest export wins); an update feed or change list one per file,
       * so that every file waits and the runtime merges them (issue 13).
       */
      slot?: string;
    }
  | { kind: 'reconcile' }
  | { kind: 'resume' };

/** What the queue needs from its owner. */
export interface QueueHandlers {
  /** Run one job; a rejection is the handler's to log, the queue goes on. */
  run(job: DatasetJob): Promise<void>;
  /** A waiting file job was replaced by a newer file before it ran. */
  superseded(job: Extract<DatasetJob, { kind: 'file' }>, by: ReadyFile): void;
  /** The number of waiting and running jobs changed. */
  depthChanged?(depth: number): void;
}

/**
 * One sync at a time per dataset (issue 4). Files are coalesced: at most one
 * file job waits per slot, and a newer file replaces it (any export replaces a
 * reapply), so the next sync reads the newest export only. Other jobs wait
 * once each, in arrival order.
 */
export class DatasetQueue {
  readonly #h: QueueHandlers;
  #waiting: DatasetJob[] = [];
  #running: DatasetJob | undefined;
  #idle: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(handlers: QueueHandlers) {
    this.#h = handlers;
  }

  /** Waiting plus running jobs. */
  get depth(): number {
    return this.#waiting.length + (this.#running ? 1 : 0);
  }

  /** Take every waiting file job off the queue (the runtime runs them with the one it runs now, as one plan). */
  takeFiles(): Array<Extract<DatasetJob, { kind: 'file' }>> {
    const files = this.#waiting.filter((j): j is Extract<DatasetJob, { kind: 'file' }> => j.kind === 'file');
    if (files.length === 0) return [];
    this.#waiting = this.#waiting.filter((j) => j.kind !== 'file');
    this.#changed();
    return files;
  }

  /** True when a file job waits to run (at most one per slot does). */
  get fileWaiting(): boolean {
    return this.#waiting.some((j) => j.kind === 'file');
  }

  /** The job being run now, if any. */
  get running(): DatasetJob | undefined {
    return this.#running;
  }

  /** Add a job; returns false when the queue is stopped. */
  push(job: DatasetJob): boolean {
    if (this.#stopped) return false;
    if (job.kind === 'file') {
      const i = this.#waiting.findIndex((j) => j.kind === 'file' && j.slot === job.slot);
      const old = this.#waiting[i];
      if (old?.kind === 'file') {
        const [keep, drop] = newerFileJob(job, old) ? [job, old] : [old, job];
        this.#waiting[i] = keep;
        if (drop.file.path !== keep.file.path) this.#h.superseded(drop, keep.file);
        else void drop.cleanup?.();
        return true;
      }
    } else if (this.#waiting.some((j) => j.kind === job.kind)) {
      return true;
    }
    this.#waiting.push(job);
    this.#changed();
    this.#pump();
    return true;
  }

  /** Resolves when nothing is waiting or running. */
  async idle(): Promise<void> {
    while (this.depth > 0) await this.#idle;
  }

  /**
   * Stop taking jobs and let the running one finish. Waiting jobs are returned
   * (not run), so a reload can hand them to the dataset's next queue.
   */
  async stop(): Promise<DatasetJob[]> {
    this.#stopped = true;
    const left = this.#waiting;
    this.#waiting = [];
    this.#changed();
    while (this.#running) await this.#idle;
    return left;
  }

  #changed(): void {
    this.#h.depthChanged?.(this.depth);
  }

  #pump(): void {
    if (this.#running) return;
    const job = this.#waiting.shift();
    if (!job) return;
    this.#running = job;
    let done!: () => void;
    this.#idle = new Promise<void>((r) => (done = r));
    void (async () => {
      try {
        await this.#h.run(job);
      } catch {
        // The handler logs its own failures; the queue must go on.
      } finally {
        if (job.kind === 'file') await job.cleanup?.().catch(() => undefined);
        this.#running = undefined;
        this.#changed();
        done();
        if (!this.#stopped) this.#pump();
      }
    })();
  }
}

/**
 * Of two file jobs, true when `job` (the later arrival) is the export to keep:
 * a reapply (the last export again, from processed/) never wins against any
 * other export, since its archived copy may carry a fresh mtime (a copy across
 * file systems); otherwise the newer mtime wins, equal mtimes the later arrival.
 */
function newerFileJob(job: Extract<DatasetJob, { kind: 'file' }>, old: Extract<DatasetJob, { kind: 'file' }>): boolean {
  if ((job.origin === 'reapply') !== (old.origin === 'reapply')) return old.origin === 'reapply';
  return job.file.mtimeMs >= old.file.mtimeMs;
}
