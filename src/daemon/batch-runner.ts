import type { Logger } from 'pino';
import type { DatasetConfig } from '../config/schema.js';
import { event } from '../log/events.js';
import type { DatasetQueue } from '../triggers/queue.js';
import type { ReadyFile } from '../files/ready-file.js';
import type { FileJobDeps, FileJobResult } from '../files/file-job.js';
import { runFileBatch } from '../files/file-batch.js';
import type { FileJob, FileOrder } from './file-order.js';
import { keepsAll } from './feed-triggers.js';
import type { CoalesceWindow } from './coalesce-window.js';
import type { Clock } from '../clock.js';

/** What the batch runner needs from its dataset runtime. */
export interface BatchRunnerDeps {
  logger: Logger;
  queue: Pick<DatasetQueue, 'takeFiles' | 'push'>;
  order: Pick<FileOrder, 'takePending' | 'stale' | 'accepted'>;
  /** Issue 14: true when the job's dataset or feed is paused (the job then waits, parked). */
  park(job: FileJob): boolean;
  /** A job replaced by a newer file of its feed: archived. */
  supersede(job: FileJob, by: ReadyFile): Promise<void>;
  fileDeps(): FileJobDeps;
  /** What follows every file job (retry, drift health, pruning). */
  afterFiles(job: FileJob, next: FileJobResult): Promise<void>;
  /** Aborted at stop. */
  stopping: AbortSignal;
  clock: Clock;
  /** The wait for files the dataset's other feed folders are still receiving (coalesce_ms). */
  window: CoalesceWindow;
  /** The feeds other than `feed` whose folder is receiving files now, with how many. */
  arriving(feed: string): Array<{ feed: string; files: number }>;
}

/**
 * Issue 13's coalescing: the files waiting for any feed of a dataset run as
 * one plan (engine.syncFeedFiles, through src/files/file-batch.ts). Of a
 * full feed's files only the newest counts (the older are superseded, as a
 * single export's are); every file of an update feed or change list counts,
 * applied oldest first. A paused feed's files are left waiting. Files that
 * must be tried again wait together with the newest of them (its companions).
 */
export class BatchRunner {
  readonly #deps: BatchRunnerDeps;
  /** The other files of a batch that must be tried again, waiting with the batch's newest file (FileOrder's pending retry). */
  readonly #companions = new Map<FileJob, FileJob[]>();

  constructor(deps: BatchRunnerDeps) {
    this.#deps = deps;
  }

  /** `lead` with every file waiting for any feed of the dataset (on the queue, or for its retry) as one plan. */
  async run(ds: DatasetConfig, lead: FileJob): Promise<void> {
    const { queue, order, logger } = this.#deps;
    await this.#gather(ds, lead);
    // Stopped while waiting: the files stay in their folders and come back at the next start.
    if (this.#deps.stopping.aborted) return;
    // Files handed on in the same moment (a resume, a start-up scan) join this plan rather than wait for the next.
    await new Promise<void>((r) => setImmediate(r));
    const taken: FileJob[] = [lead];
    const add = (j: FileJob | undefined) => {
      if (!j || taken.includes(j)) return;
      taken.push(j);
    };
    for (const j of queue.takeFiles()) add(j);
    add(order.takePending());
    for (const j of [...taken]) {
      for (const c of this.#companions.get(j) ?? []) add(c);
      this.#companions.delete(j);
    }
    const jobs: FileJob[] = [];
    for (const j of taken) {
      if (j.origin === 'reapply') void queue.push(j); // the last catalogue again after drift: on its own, next
      else if (j === lead || !this.#deps.park(j)) jobs.push(j);
    }
    // Of each full feed only its newest file; an older one is superseded by it.
    const newestFull = new Map<string, FileJob>();
    for (const j of jobs) {
      const feed = j.feed ?? ds.feed;
      if (keepsAll(ds, feed)) continue;
      const had = newestFull.get(feed);
      if (!had || j.file.mtimeMs >= had.file.mtimeMs) newestFull.set(feed, j);
    }
    const kept: FileJob[] = [];
    for (const j of jobs) {
      const feed = j.feed ?? ds.feed;
      const newest = newestFull.get(feed);
      if (newest && newest !== j) {
        if (j.file.path !== newest.file.path) await this.#deps.supersede(j, newest.file);
        continue;
      }
      if (!(await order.stale(j))) kept.push(j);
    }
    if (kept.length === 0) return;
    kept.sort((a, b) => a.file.mtimeMs - b.file.mtimeMs);
    // In one plan the full feed's export is the base and the others apply onto it. A change list older than
    // that export must not outlive it (the export is the later word on which records exist): the files older
    // than the export go first as their own plan, the export and the rest next.
    const at = kept.findIndex((j) => !keepsAll(ds, j.feed ?? ds.feed));
    if (at > 0 && kept.slice(0, at).some((j) => ds.feeds[j.feed ?? ds.feed]?.role === 'changes')) {
      const later = kept.splice(at);
      logger.info(event('sync.coalesced', { split_at: later[0]!.file.path, reason: 'change_list_older_than_export', next: later.map((j) => j.file.path) }), 'a change list older than the export goes first, on its own');
      for (const j of later) void queue.push(j);
    }
    const results = await runFileBatch(ds, kept.map((j) => ({ file: j.file, origin: j.origin, feed: j.feed ?? ds.feed })), this.#deps.fileDeps());
    for (const [i, j] of kept.entries()) order.accepted(j, results[i]!);
    if (this.#deps.stopping.aborted) return;
    // One retry for the files that must be tried again: the newest carries the others along (#companions).
    const again = kept.filter((_, i) => results[i]!.next === 'retry');
    const retryLead = again[again.length - 1];
    if (retryLead) this.#companions.set(retryLead, again.slice(0, -1));
    const anyAccepted = results.some((r) => r.accepted);
    const leadResult = retryLead ? results[kept.indexOf(retryLead)]! : { ...results[results.length - 1]!, accepted: anyAccepted };
    await this.#deps.afterFiles(retryLead ?? kept[kept.length - 1]!, leadResult);
  }

  /**
   * A catalogue and a stock file written together make one plan whichever
   * settles first: while the dataset's other feed folders still receive a
   * file, wait for it (at most coalesce_ms; the waiting files then all join).
   */
  async #gather(ds: DatasetConfig, lead: FileJob): Promise<void> {
    const { logger, clock } = this.#deps;
    const feed = lead.feed ?? ds.feed;
    const arriving = () => this.#deps.arriving(feed);
    const ms = ds.coalesce_ms ?? 0;
    const now = arriving();
    const waiting = this.#deps.window.wait(arriving, ms, this.#deps.stopping);
    if (!waiting) return;
    const since = clock.now();
    const fields = { file: lead.file.path, feed, arriving: now.map((a) => a.feed), files_arriving: now.reduce((n, a) => n + a.files, 0), wait_ms: ms };
    logger.info(event('sync.gathering', fields), "waiting for the files the dataset's other feeds are still receiving");
    const ended = await waiting;
    const still = ended === 'interval' ? arriving().map((a) => a.feed) : [];
    logger.info(
      event('sync.gathered', { file: lead.file.path, feed, ended, waited_ms: clock.now() - since, still_arriving: still }),
      ended === 'interval' ? 'coalesce_ms passed: the files ready now make the plan, the others a later one' : 'the files that were arriving are ready: they join the plan',
    );
  }

  /** `job` was superseded: the files that waited for their retry with it are not, they go back on the queue. */
  release(job: FileJob): void {
    for (const c of this.#companions.get(job) ?? []) void this.#deps.queue.push(c);
    this.#companions.delete(job);
  }
}
