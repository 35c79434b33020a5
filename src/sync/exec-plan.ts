import { NEVER_FOLLOW, closeFile, fdReadStream, openRegularFile, type LinkPolicy } from '../sources/open-file.js';
import { chmodSync, closeSync, createReadStream, createWriteStream, existsSync, fchmodSync, fsyncSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, writeSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { dirname, join, resolve } from 'node:path';
import { ConnectorError } from '../errors.js';
import type { PublishOptions } from '../api/wire.js';
import type { SourceIdentity } from '../snapshot/types.js';
import type { Changeset } from './changeset.js';

/** The request path a plan takes. */
export type ApplyPath = 'per_record' | 'replace' | 'import';

/** Change counts as the server reports them for a draft (A15/A19). */
export interface DraftCounts {
  added: number;
  changed: number;
  deleted: number;
}

/**
 * What execute runs: the changeset plus the decisions made for it. Persisted
 * (plan file) before the first request, so that resume and approve continue
 * from exactly this plan without the source file (house style 7).
 */
export interface ExecPlan {
  planId: string;
  dataset: string;
  path: ApplyPath;
  /** Publish each per-record write directly (no draft). */
  direct: boolean;
  /** Stage only: leave the verified draft for a person (sync option publish=false). */
  stageOnly: boolean;
  /** Active version and ETag the plan was made against (If-Match). */
  baseVersion: number;
  baseEtag: string | null;
  /** Records in the dataset before (snapshot) and after the change. */
  baseCount: number;
  resultCount: number;
  changeset: Changeset;
  expected: DraftCounts;
  /** Flags the dataset config sets explicitly; never added on the connector's own (issue 4). */
  configFlags: PublishOptions;
  /** Why the plan-time guards hold this change, or null when none does. */
  heldBy?: string | null;
  /** A5: the flags the change needs to be published (what a person's approve sends). */
  requiredFlags?: PublishOptions;
  /** A person approved this held change: it is sent and published with `requiredFlags`, the guards are not asked again. */
  approved?: boolean;
  source: SourceIdentity | null;
  file: string | null;
  /** record_id → 1-based source file line, to map server row errors back (A3). */
  lines: Record<string, number>;
  /** 1-based file line of the header (preamble lines + 1): an upload's row errors count data lines after it (A3). */
  headerLine?: number;
  /** path import: the copy of the file to upload (kept beside the plan, so a resumed upload sends the same bytes) and its fields (A14). */
  upload?: PlanUpload | null;
  createdAt: number;
}

/** What an import plan uploads. */
export interface PlanUpload {
  /** The copy of the export in the plan directory. */
  path: string;
  filename: string;
  contentType: string;
  /** sha256 of its bytes (equal to the export read and diffed). */
  sha256: string;
  mapping: Record<string, string>;
  encoding: string;
}

/** Where an import plan keeps its copy of the file. */
export function uploadCopyPath(dir: string, planId: string): string {
  return join(dir, `${planId}.upload`);
}

/** Where plan files live, beside the state database. */
export function planDir(stateDbPath: string): string {
  return join(stateDbPath + '.plans');
}

/**
 * Make the plan folder 0700 (with any parent it needs) when it does not exist,
 * whatever the umask: plans and upload copies hold the shop's records. A folder
 * that exists keeps its mode, as openStateDb does for the state folder (the
 * operator chose it; `doctor` warns when others can read it).
 */
export function ensurePlanDir(dir: string): void {
  const abs = resolve(dir);
  const first = mkdirSync(abs, { recursive: true, mode: 0o700 });
  if (first === undefined) return;
  // mkdir's mode is masked by the umask: set it exactly on each folder made here, from the deepest up to the first.
  for (let d = abs; ; d = dirname(d)) {
    chmodSync(d, 0o700);
    if (d === first || dirname(d) === d) break;
  }
}

/** Open `path` as a new 0600 file, whatever the umask; a leftover of that name (a crash mid-write) is replaced, its mode not kept. */
function openPrivate(path: string): number {
  rmSync(path, { force: true });
  const fd = openSync(path, 'wx', 0o600);
  try {
    fchmodSync(fd, 0o600);
  } catch (err) {
    closeSync(fd);
    throw err;
  }
  return fd;
}

/**
 * Copy `from` into the plan folder as `to`, 0600 whatever the umask and the
 * source's mode (copyFile would give the copy the export's mode, often 0644),
 * and fsync it: a resumed upload must find these exact bytes.
 */
export async function copyPrivately(from: string, to: string, links: LinkPolicy = NEVER_FOLLOW): Promise<void> {
  ensurePlanDir(dirname(to));
  // The export is opened as its read was (a link only where allowed, never a FIFO that would block).
  const src = await openRegularFile(from, links);
  const fd = openPrivate(to);
  try {
    await pipeline(fdReadStream(src.fd), createWriteStream(to, { fd, autoClose: false }));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
    await closeFile(src.fd);
  }
}

/** Write the plan atomically (temp file, fsync, rename) before anything is sent; 0600 in a folder made 0700 (ensurePlanDir). */
export function savePlan(dir: string, plan: ExecPlan): void {
  ensurePlanDir(dir);
  const file = join(dir, `${plan.planId}.json`);
  const tmp = `${file}.tmp`;
  const fd = openPrivate(tmp);
  try {
    writeSync(fd, JSON.stringify(plan));
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  const dfd = openSync(dir, 'r');
  try {
    fsyncSync(dfd);
  } finally {
    closeSync(dfd);
  }
}

/** Load a saved plan; null when it is gone. */
export function loadPlan(dir: string, planId: string): ExecPlan | null {
  const file = join(dir, `${planId}.json`);
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as ExecPlan;
  } catch (cause) {
    throw new ConnectorError('PLAN_FILE_CORRUPT', `Plan file ${file} is unreadable.`, { action: 'stop', cause, context: { file } });
  }
}

/** Remove a plan file once nothing can need it any more. */
export function removePlan(dir: string, planId: string): void {
  rmSync(join(dir, `${planId}.json`), { force: true });
  rmSync(uploadCopyPath(dir, planId), { force: true });
}

/** Ids of the plans that have a file (plan or upload copy) in `dir`; none when it does not exist. */
export function listPlanIds(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const ids = new Set<string>();
  for (const n of names) {
    const m = /^(.+)\.(json|upload)$/.exec(n);
    if (m) ids.add(m[1]!);
  }
  return [...ids];
}
