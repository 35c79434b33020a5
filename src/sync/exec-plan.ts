import { NEVER_FOLLOW, closeFile, fdReadStream, openRegularFile, type LinkPolicy } from '../sources/open-file.js';
import { chmodSync, closeSync, createReadStream, createWriteStream, existsSync, fchmodSync, fsyncSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { dirname, join, resolve } from 'node:path';
import { ConnectorError } from '../errors.js';
import type { PublishOptions } from '../api/wire.js';
import type { SourceIdentity } from '../snapshot/types.js';
import { recordJson } from '../snapshot/record-json.js';
import type { DatasetRecord } from '../model/record.js';
import { HEAD_OPERATIONS, type Changeset, type ChangesetSummary } from './changeset.js';
import { changesetData, changesetLines, persistChangeset } from './changeset-files.js';
import { openPrivate } from './line-file.js';
import type { GuardResult } from './guards.js';
import type { Provenance } from '../history/writer.js';

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
  /** The plan file holds its summary; its lists are in the plan's changeset folder (changesetDirOf). */
  changeset: Changeset;
  /** Per-record writes the server refused for sure (422), as journal step names (`post:<id>`): out of the changeset. */
  refused?: string[];
  expected: DraftCounts;
  /** Flags the dataset config sets explicitly; never added on the connector's own (issue 4). */
  configFlags: PublishOptions;
  /** Why the plan-time guards hold this change, or null when none does. */
  heldBy?: string | null;
  /** The guard results that hold it (with a value guard's samples), for status, approve and a hold that sends nothing. */
  heldGuards?: GuardResult[];
  /** A5: the flags the change needs to be published (what a person's approve sends). */
  requiredFlags?: PublishOptions;
  /** A person approved this held change: it is sent and published with `requiredFlags`, the guards are not asked again. */
  approved?: boolean;
  source: SourceIdentity | null;
  file: string | null;
  /** record_id → 1-based source file line, in plan files written before issue 18 (now: planLines). */
  lines?: Record<string, number>;
  /** 1-based file line of the header (preamble lines + 1): an upload's row errors count data lines after it (A3). */
  headerLine?: number;
  /** path import: the copy of the file to upload (kept beside the plan, so a resumed upload sends the same bytes) and its fields (A14). */
  upload?: PlanUpload | null;
  createdAt: number;
  /** A restore (issue 14): the history point it brings back. */
  restore?: { toSeq: number; toVersion: number | null; at: number };
}

/** The history provenance of what a plan publishes (issue 14): its run, export, counts and the delete guard's ratio. */
export function planProvenance(plan: ExecPlan): Provenance {
  const c = plan.changeset.counts;
  return {
    kind: plan.restore ? 'restore' : 'sync',
    planId: plan.planId,
    file: plan.file,
    fileHash: plan.source?.fileHash ?? null,
    detail: {
      counts: plan.expected,
      delete_ratio: c.deletable > 0 ? Math.round((c.deletes / c.deletable) * 10_000) / 10_000 : 0,
      deletable: c.deletable,
      approved: plan.approved === true,
      held_by: plan.heldBy ?? null,
      ...(plan.restore ? { restore: plan.restore } : {}),
    },
  };
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

/** Where a plan keeps its changeset (changeset-files.ts). */
export function changesetDirOf(dir: string, planId: string): string {
  return join(dir, `${planId}.changeset`);
}

/**
 * Make the changeset of a fresh plan the plan's own: its folder (where the diff
 * wrote it) fsynced and moved beside the plan file, read from there on.
 */
export function keepChangeset(dir: string, plan: ExecPlan): void {
  const from = plan.changeset.folder;
  if (from === undefined) throw new TypeError(`plan ${plan.planId}: its changeset is not one a diff wrote to disk`);
  const to = changesetDirOf(dir, plan.planId);
  // Whose it is, for the sweep of a folder a crash left before the plan file or its journal row was written.
  writeFileSync(join(from, 'dataset'), plan.dataset, { mode: 0o600 });
  persistChangeset(from, to);
  plan.changeset = { ...summaryOf(plan.changeset), ...changesetData(to) };
}

/** The 1-based source file lines of record ids of a plan (A3: server row errors back to the export). */
export function planLines(dir: string, plan: ExecPlan, ids: Iterable<string>): Map<string, number> {
  if (plan.lines) {
    const lines = plan.lines;
    return new Map([...ids].flatMap((id) => (lines[id] !== undefined ? [[id, lines[id]] as const] : [])));
  }
  return changesetLines(changesetDirOf(dir, plan.planId), ids);
}

/** The dataset a plan's files belong to (from its plan file, else its changeset folder); null when neither says. */
export function planOwner(dir: string, planId: string): string | null {
  try {
    return (JSON.parse(readFileSync(join(dir, `${planId}.json`), 'utf8')) as { dataset?: string }).dataset ?? null;
  } catch {
    try {
      return readFileSync(join(changesetDirOf(dir, planId), 'dataset'), 'utf8');
    } catch {
      return null;
    }
  }
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
    writeSync(fd, JSON.stringify({ ...plan, changeset: summaryOf(plan.changeset) }));
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

/** Load a saved plan with its changeset; null when the plan file or its changeset folder is gone. */
export function loadPlan(dir: string, planId: string): ExecPlan | null {
  const file = join(dir, `${planId}.json`);
  if (!existsSync(file)) return null;
  let saved: ExecPlan & { changeset: ChangesetSummary | LegacyChangeset };
  try {
    saved = JSON.parse(readFileSync(file, 'utf8')) as typeof saved;
  } catch (cause) {
    throw new ConnectorError('PLAN_FILE_CORRUPT', `Plan file ${file} is unreadable.`, { action: 'stop', cause, context: { file } });
  }
  const cs = saved.changeset;
  let changeset: Changeset;
  if (isLegacy(cs)) changeset = fromLegacy(cs);
  else {
    const data = changesetDirOf(dir, planId);
    if (!existsSync(data)) return null;
    changeset = { ...cs, ...changesetData(data) };
  }
  const plan: ExecPlan = { ...saved, changeset };
  if (plan.refused?.length) plan.changeset = withoutRefused(plan.changeset, new Set(plan.refused));
  return plan;
}

/** The changeset without the writes the server refused (names as journaled: post:, patch:, delete: and the id). */
export function withoutRefused(cs: Changeset, refused: ReadonlySet<string>): Changeset {
  const keep = <T>(list: Iterable<T>, name: (x: T) => string): Iterable<T> => ({
    *[Symbol.iterator]() {
      for (const x of list) if (!refused.has(name(x))) yield x;
    },
  });
  return {
    ...cs,
    adds: keep(cs.adds, (r) => `post:${r.record_id}`),
    addTexts: keep(cs.addTexts, (r) => `post:${r.record_id}`),
    changes: keep(cs.changes, (c) => `patch:${c.record_id}`),
    deletes: keep(cs.deletes, (d) => `delete:${d.record_id}`),
  };
}

/** What a plan file holds of its changeset. */
function summaryOf(cs: Changeset): ChangesetSummary {
  return { ownership: cs.ownership, counts: cs.counts, digest: cs.digest, foreignEdits: cs.foreignEdits, head: cs.head, ...(cs.values ? { values: cs.values } : {}) };
}

/** A changeset as plan files held it before issue 18: every list inline. */
type LegacyChangeset = Omit<ChangesetSummary, 'head'> & {
  records: DatasetRecord[];
  adds: Changeset['head']['adds'];
  changes: Changeset['head']['changes'];
  deletes: Changeset['head']['deletes'];
  adopted: string[];
};

function isLegacy(cs: ChangesetSummary | LegacyChangeset): cs is LegacyChangeset {
  return Array.isArray((cs as LegacyChangeset).adds);
}

/** A plan file from before the upgrade (resumed after it): its lists as arrays. */
function fromLegacy(cs: LegacyChangeset): Changeset {
  const head = { adds: cs.adds.slice(0, HEAD_OPERATIONS), changes: cs.changes.slice(0, HEAD_OPERATIONS), deletes: cs.deletes.slice(0, HEAD_OPERATIONS) };
  const text = (r: DatasetRecord) => ({ record_id: r.record_id, json: recordJson(r) });
  return { ...cs, head, records: cs.records.map(text), addTexts: cs.adds.map(text) };
}

/** Remove a plan file once nothing can need it any more. */
export function removePlan(dir: string, planId: string): void {
  rmSync(join(dir, `${planId}.json`), { force: true });
  rmSync(uploadCopyPath(dir, planId), { force: true });
  rmSync(changesetDirOf(dir, planId), { recursive: true, force: true });
}

/** Ids of the plans that have a file (plan, upload copy or changeset) in `dir`; none when it does not exist. */
export function listPlanIds(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const ids = new Set<string>();
  for (const n of names) {
    const m = /^(.+)\.(json|upload|changeset)$/.exec(n);
    if (m) ids.add(m[1]!);
  }
  return [...ids];
}
