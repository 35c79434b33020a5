import { lstat, mkdir, rename } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Logger } from 'pino';
import type { ExportConfig } from '../config/exports.js';
import type { DatasetConfig } from '../config/schema.js';
import { ConnectorError } from '../errors.js';
import { fitName, splitExt } from '../file-names.js';
import { event } from '../log/events.js';
import { SourceError } from '../model/source-error.js';
import { hashFile } from '../sources/open-file.js';
import { rejectFilePath } from '../sources/reject-file.js';
import type { ExportFileId, Taker, TakerFileMark, TakerFileOutcome } from '../snapshot/export-takers.js';
import type { SyncSummary } from '../sync/outcome.js';
import { archiveName, fateDir, type FileFate } from './archive.js';
import { disposeReported, type StuckFiles } from './dispose-reported.js';
import { nextForError, nextForResult, type FileJobResult, type FileNext } from './file-job.js';
import { linkPolicyFor } from './links.js';
import type { FileSyncer, HealthReasons } from './ports.js';
import type { FileOrigin, ReadyFile } from './ready-file.js';
import type { Clock } from '../clock.js';
import type { LinkPolicy } from '../sources/open-file.js';
import { crashPoint } from '../sync/executor/crash-hook.js';
import type { SharedRead } from '../sync/executor/shared-read.js';
import type { SourceRead } from '../sync/executor/source-read.js';

/** One taker of a shared export as the fan-out runs it: the dataset seen through its taking feed (feedView). */
export interface TakerRun extends Taker {
  /** The dataset as the feed reads the file; null when the dataset is not served now (its key unreadable): the file waits for it. */
  view: DatasetConfig | null;
  /** The name of its reject file beside the export: the dataset's, or dataset-feed when the dataset takes the export with several feeds. */
  tag: string;
}

/** What the fan-out remembers of each taker (src/snapshot/export-takers.ts). */
export interface TakerMarks {
  doneWith(exp: string, t: Taker): string | null;
  markDone(exp: string, t: Taker, sha256: string, result: string, at: number): void;
  fileMark(exp: string, t: Taker, file: ExportFileId): TakerFileMark | null;
  markFile(exp: string, t: Taker, file: ExportFileId, mark: TakerFileMark & { sha256?: string | null }): void;
  forgetFile(exp: string, file: ExportFileId): void;
  marksOf(exp: string, file?: ExportFileId): Array<ExportFileId & Taker & { outcome: TakerFileOutcome }>;
  files(exp: string): ExportFileId[];
}

/** How one taker ended with the file. */
export interface TakerOutcome extends Taker {
  /** done: published, unchanged, held or staged for a person, or done before (skipped); rejected: the file is bad for it; retry: try it again later. */
  outcome: 'done' | 'skipped' | 'rejected' | 'retry';
  result: string;
  code: string | null;
  /** Why it was refused (the summary's message), when it was. */
  message?: string | null;
}

/** What a fan-out needs. */
export interface FanOutDeps {
  engine: FileSyncer;
  marks: TakerMarks;
  logger: Logger;
  health: HealthReasons;
  timezone: string;
  clock: Clock;
  signal?: AbortSignal;
  /** `sync --export --no-publish`: each taker's change is staged, not published. */
  publish?: false;
  /** The daemon: what became of the file for each taker is noted per file (export_files), each taker's progress. */
  progress?: true;
  onSummary?(dataset: string, s: SyncSummary): void;
  onError?(dataset: string, err: unknown): void;
  /** The file, done with by every taker, that cannot be archived: noted for `status` of each (dispose-reported.ts). */
  stuck?: StuckFiles;
}

/** Pure: the file's fate once every taker ran: kept for a retry while one must try again, failed/ when one refused it, else processed/. */
export function fanOutNext(outcomes: readonly TakerOutcome[]): FileNext {
  const retry = outcomes.filter((o) => o.outcome === 'retry');
  if (retry.length > 0) return { next: 'retry', slow: retry.every((o) => o.result === 'waiting' || o.result === 'stopped' || o.code === 'NOT_SERVED') };
  return { next: 'dispose', fate: outcomes.some((o) => o.outcome === 'rejected') ? 'failed' : 'processed' };
}

/** The reject file of one taker beside the export (a name the watcher ignores). */
export function takerRejectPath(file: string, tag: string): string {
  return join(dirname(file), fitName(`${splitExt(basename(file)).stem}.${tag}`, '.rejected.csv'));
}

/**
 * One file of a shared export (issue 13's fan-out): hash it once, read it
 * once for every taker that is not done with this content (readOnce), then
 * run those takers one after another, each through the engine as a sync of
 * its feed from its read. A taker that fails does not stop
 * the others. A taker done with the file is remembered at once (TakerMarks),
 * so a retry of the file or a restart between takers runs only the others and
 * never sends this file's values again over what a dataset published since.
 * The file is moved or deleted (watched files) only after every taker is done
 * with it: to failed/ when one refused it (its reject file beside it, one per
 * taker), and kept for a retry while one must try again.
 */
export async function runFanOutJob(
  name: string,
  exp: ExportConfig,
  takers: readonly TakerRun[],
  job: { file: ReadyFile; origin: FileOrigin },
  deps: FanOutDeps,
): Promise<FileJobResult & { outcomes: TakerOutcome[] }> {
  const taken = await takeFanOutFile(name, exp, takers, job, deps);
  if (!('outcomes' in taken)) return { ...taken, outcomes: [] };
  const { outcomes } = taken;
  if (deps.signal?.aborted) return { next: 'retry', slow: false, accepted: false, outcomes };
  const next = fanOutNext(outcomes);
  const accepted = next.next === 'dispose' && next.fate === 'processed';
  if (next.next === 'retry') {
    deps.logger.warn(event('file.kept', { file: job.file.path, takers: takersText(takers, outcomes), waiting: outcomes.filter((o) => o.outcome === 'retry').map((o) => o.dataset) }), 'file kept: a dataset taking it must try it again');
    return { ...next, accepted, outcomes };
  }
  const archived = await archiveFanOutFile(exp, takers, job, next.fate, outcomes, deps);
  return archived ? { ...next, accepted, outcomes } : { next: 'retry', slow: false, accepted, outcomes };
}

/** Each taker's result for the log lines: `dataset: result` (dataset/feed when a dataset takes the export with several feeds). */
export function takersText(takers: readonly Taker[], outcomes: readonly TakerOutcome[]): string[] {
  return outcomes.map((o) => `${takerName(takers, o)}: ${o.result}`);
}

/** A taker in log lines: its dataset, or dataset/feed when the dataset takes the export with several feeds. */
export function takerName(takers: readonly Taker[], t: Taker): string {
  return takers.filter((o) => o.dataset === t.dataset).length > 1 ? `${t.dataset}/${t.feed}` : t.dataset;
}

/**
 * Hash the file once, read it once for every taker that is not done with
 * this content (readOnce), then run those takers one after another. A file
 * gone or unreadable says so with the FileJobResult the job ends with; else
 * each taker's outcome.
 */
export async function takeFanOutFile(
  name: string,
  exp: ExportConfig,
  takers: readonly TakerRun[],
  job: { file: ReadyFile; origin: FileOrigin },
  deps: FanOutDeps,
): Promise<FileJobResult | { hash: string; outcomes: TakerOutcome[] }> {
  const { file, origin } = job;
  const log = deps.logger;
  const links = linkPolicyFor(origin, exp.watch);
  log.info(event('file.ready', { file: file.path, origin, bytes: file.size, takers: takers.map((t) => t.dataset) }), 'file ready');
  let hash: string;
  try {
    hash = await hashFile(file.path, links);
  } catch (err) {
    const code = err instanceof SourceError ? String(err.context.errno ?? err.code) : ((err as NodeJS.ErrnoException).code ?? 'INTERNAL');
    if (code === 'ENOENT' || code === 'LINK_NOT_FOLLOWED' || code === 'NOT_REGULAR_FILE') {
      log.warn(event('file.skipped', { file: file.path, origin, reason: code === 'ENOENT' ? 'gone' : 'not_regular_file' }), 'file skipped');
      return { next: 'dispose', fate: 'processed', accepted: false };
    }
    log.error(event('file.unreadable', { file: file.path, origin, code, hint: 'grant the service user read access to the file (and search access to its folder)', err }), 'cannot read the export');
    return { next: 'retry', slow: false, accepted: false };
  }

  const run: FileRun = { name, file, origin, links, hash };
  const outcomes: TakerOutcome[] = [];
  const once = await readOnce(run, takers, deps);
  try {
    await runTakers(run, takers, once?.reads ?? new Map(), outcomes, deps);
  } finally {
    once?.shared.dispose();
  }
  return { hash, outcomes };
}

/**
 * The file's fate applied once every taker is done with it (watched files:
 * moved or deleted, each taker's reject file beside it), with its log line.
 * False when it could not be moved (said, and the file stays).
 */
export async function archiveFanOutFile(
  exp: ExportConfig,
  takers: readonly Taker[],
  job: { file: ReadyFile; origin: FileOrigin },
  fate: FileFate,
  outcomes: readonly TakerOutcome[],
  deps: Pick<FanOutDeps, 'logger' | 'health' | 'clock' | 'timezone' | 'stuck'> & { retryInMs?: number },
): Promise<boolean> {
  const { file, origin } = job;
  const log = deps.logger;
  if (!((origin === 'watch' || origin === 'startup') && exp.watch)) return true;
  const byDataset = takersText(takers, outcomes);
  const watched = { name: takers[0]?.dataset ?? 'export', watch: exp.watch };
  const d = await disposeReported(watched, file, fate, { now: deps.clock.now(), timezone: deps.timezone }, deps);
  if (d === null) return false;
  const dir = exp.watch.after === 'leave' ? null : fateDir(exp.watch, fate);
  const rejects = await archiveRejectFiles(file, takers.map((t) => tagOf(takers, t)), dir, d.action === 'moved' ? d.to : join(dir ?? '', archiveName(file.name, deps.clock.now(), deps.timezone)));
  const fields = { file: file.path, fate, takers: byDataset, ...d, ...(rejects.length > 0 ? { rejectFiles: rejects } : {}) };
  if (fate === 'failed') {
    const refused = outcomes.filter((o) => o.outcome === 'rejected');
    const every = outcomes.every((o) => o.outcome === 'rejected' || o.outcome === 'skipped');
    // The file refused by itself (read once for all: its size, bytes, header, a cut last row): one reason, said once.
    const one = every && refused.every((o) => o.message === refused[0]!.message) ? { reason: refused[0]!.message ?? null } : {};
    log.warn(event('file.rejected', { ...fields, ...one }), every ? 'file rejected by every dataset taking it' : 'file rejected by a dataset taking it: the others have it');
  } else log.info(event('file.processed', fields), 'file processed by every dataset taking it');
  return true;
}

/** A taker's reject-file tag: its dataset, or dataset-feed when the dataset takes the export with several feeds. */
export function tagOf(takers: readonly Taker[], t: Taker): string {
  return takers.filter((o) => o.dataset === t.dataset).length > 1 ? `${t.dataset}-${t.feed}` : t.dataset;
}

/** One file of a shared export as its takers run it. */
interface FileRun {
  name: string;
  file: ReadyFile;
  origin: FileOrigin;
  links: LinkPolicy;
  hash: string;
}

/**
 * The file read once for every taker that will sync it (two or more, the
 * engine able to): one decode and parse, each taker's rows and mapping
 * (engine.readShared), each read handed to that taker's sync. Null, when
 * fewer take it or the shared read fails for another reason than the file
 * (logged): each taker then reads it in its own sync, as one alone does.
 */
async function readOnce(run: FileRun, takers: readonly TakerRun[], deps: FanOutDeps): Promise<{ shared: SharedRead; reads: Map<TakerRun, SourceRead | null> } | null> {
  const todo = takers.filter((t) => t.view !== null && deps.marks.doneWith(run.name, t) !== run.hash);
  if (!deps.engine.readShared || todo.length < 2 || deps.signal?.aborted) return null;
  const fields = { file: run.file.path, origin: run.origin, takers: todo.map((t) => `${t.dataset}/${t.feed}`) };
  try {
    const shared = await deps.engine.readShared(
      todo.map((t) => t.view!),
      { file: run.file.path, links: run.links, sha256: run.hash },
    );
    const reads = new Map(todo.map((t, i) => [t, shared.reads[i] ?? null] as const));
    deps.logger.info(event('file.read', { ...fields, rows: shared.reads.find((r) => r !== null)?.rows ?? null }), 'file read once for every dataset taking it');
    return { shared, reads };
  } catch (err) {
    deps.logger.warn(event('file.read', { ...fields, code: err instanceof ConnectorError ? err.code : ((err as NodeJS.ErrnoException).code ?? 'INTERNAL'), err }), 'could not read the file once for every dataset taking it: each reads it itself');
    return null;
  }
}

/** Each taker in turn, one sync of its feed each (its read made already when `reads` has it); what became of each goes to `outcomes`. */
async function runTakers(run: FileRun, takers: readonly TakerRun[], reads: ReadonlyMap<TakerRun, SourceRead | null>, outcomes: TakerOutcome[], deps: FanOutDeps): Promise<void> {
  const { name, file, origin, links, hash } = run;
  const log = deps.logger;
  for (const t of takers) {
    if (deps.signal?.aborted) return;
    const who = { dataset: t.dataset, feed: t.feed };
    if (deps.marks.doneWith(name, t) === hash) {
      log.info(event('file.skipped', { file: file.path, origin, ...who, reason: 'same_content', file_hash: hash }), 'file skipped: this dataset is done with it');
      note(run, t, { outcome: 'skipped', result: 'skipped', code: null }, deps);
      outcomes.push({ ...who, outcome: 'skipped', result: 'skipped', code: null });
      continue;
    }
    if (!t.view) {
      log.warn(event('file.skipped', { file: file.path, origin, ...who, reason: 'not_served' }), 'dataset not served (its key cannot be read): the file waits for it');
      note(run, t, { outcome: 'retry', result: 'failed', code: 'NOT_SERVED' }, deps);
      outcomes.push({ ...who, outcome: 'retry', result: 'failed', code: 'NOT_SERVED' });
      continue;
    }
    let next: FileNext;
    let result: string;
    let code: string | null;
    let message: string | null = null;
    try {
      const summary = await deps.engine.sync(t.view, { file: file.path, links, sha256: hash, ...(reads.has(t) ? { read: reads.get(t)! } : {}) }, { ...(deps.signal ? { signal: deps.signal } : {}), ...(deps.publish === false ? { publish: false } : {}) });
      deps.onSummary?.(t.dataset, summary);
      next = nextForResult(summary.result);
      result = summary.result;
      code = summary.code;
      message = summary.message;
    } catch (err) {
      deps.onError?.(t.dataset, err);
      code = err instanceof ConnectorError ? err.code : 'INTERNAL';
      log.error(event('sync.failed', { file: file.path, ...who, code, err }), 'sync failed');
      next = nextForError(err);
      result = 'failed';
      message = err instanceof Error ? err.message : null;
    }
    crashPoint('fanout.synced');
    await tagRejectFile(file.path, t.tag);
    const outcome = next.next === 'retry' ? 'retry' : next.fate === 'failed' ? 'rejected' : 'done';
    if (outcome === 'done') deps.marks.markDone(name, t, hash, result, deps.clock.now());
    note(run, t, { outcome, result, code, message }, deps);
    crashPoint('fanout.marked');
    outcomes.push({ ...who, outcome, result, code, ...(outcome === 'rejected' ? { message } : {}) });
  }
}

/** The daemon's per-file progress: what became of the file for the taker (a file to try again is kept, holding back that taker only). */
function note(run: FileRun, t: Taker, o: Pick<TakerOutcome, 'outcome' | 'result' | 'code' | 'message'>, deps: FanOutDeps): void {
  if (!deps.progress) return;
  const outcome = o.outcome === 'retry' ? 'kept' : o.outcome === 'skipped' ? 'done' : o.outcome;
  deps.marks.markFile(run.name, t, run.file, { outcome, result: o.result, code: o.code, message: outcome === 'rejected' ? (o.message ?? null) : null, at: deps.clock.now(), sha256: run.hash });
}

/** The reject file a taker's sync wrote beside the export, renamed for that taker (the next taker writes its own). */
async function tagRejectFile(file: string, tag: string): Promise<void> {
  const written = rejectFilePath(file);
  if (!(await lstat(written).catch(() => undefined))?.isFile()) return;
  await rename(written, takerRejectPath(file, tag)).catch(() => undefined);
}

/** Each taker's reject file moved beside the archived export (named after it; into `dir` under its archive name when the export was deleted); left with after: leave. */
async function archiveRejectFiles(file: ReadyFile, tags: readonly string[], dir: string | null, archived: string): Promise<string[]> {
  if (dir === null) return [];
  const out: string[] = [];
  for (const tag of tags) {
    const from = takerRejectPath(file.path, tag);
    if (!(await lstat(from).catch(() => undefined))?.isFile()) continue;
    const to = takerRejectPath(archived, tag);
    // The export is archived already: a reject file that cannot follow it stays beside the export's old name.
    const moved = await mkdir(dirname(to), { recursive: true, mode: 0o750 })
      .then(() => rename(from, to))
      .then(() => true)
      .catch(() => false);
    if (moved) out.push(to);
  }
  return out;
}
