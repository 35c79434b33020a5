import { NEVER_FOLLOW, closeFile, fdReadStream, openRegularFile, type LinkPolicy } from '../../sources/open-file.js';
import { chmodSync, closeSync, createReadStream, createWriteStream, existsSync, fchmodSync, fsyncSync, mkdirSync, openSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { createHash } from 'node:crypto';
import { Transform } from 'node:stream';
import { dirname, join, resolve } from 'node:path';
import { ConnectorError } from '../../errors.js';
import type { PublishOptions } from '../../api/wire.js';
import type { SourceIdentity } from '../../snapshot/types.js';
export { uploadCopyPath };
import { recordJson } from '../../model/record-json.js';
import type { DatasetRecord } from '../../model/record.js';
import { HEAD_OPERATIONS, type Changeset, type ChangesetSummary } from '../core/changeset.js';
import { uploadCopyPath, type ApplyPath, type DraftCounts, type PlanUpload, type SyncPlan } from '../core/plan.js';
import { changesetData, changesetLines, persistChangeset } from '../disk/changeset-files.js';
import { openPrivate } from '../disk/line-file.js';

/** Legacy facts of a plan file written before issue 12 (an ExecPlan): kept so a plan resumed across the upgrade runs as it was. */
export interface LegacyRunFacts {
  approved?: boolean;
  refused?: string[];
  /** record_id → 1-based source file line, in plan files written before issue 18 (now: planLines). */
  lines?: Record<string, number>;
}

/** A saved plan with its changeset's lists (read from the plan's changeset folder as iterated). */
export interface LoadedPlan {
  plan: SyncPlan;
  changeset: Changeset;
  legacy: LegacyRunFacts | null;
}

/** Where a plan keeps its changeset (changeset-files.ts). */
export function changesetDirOf(dir: string, planId: string): string {
  return join(dir, `${planId}.changeset`);
}

/**
 * Make the changeset of a fresh plan the plan's own: its folder (where the diff
 * wrote it) fsynced and moved beside the plan file; returns it read from there.
 */
export function keepChangeset(dir: string, plan: SyncPlan, changeset: Changeset): Changeset {
  const from = changeset.folder;
  if (from === undefined) throw new TypeError(`plan ${plan.id}: its changeset is not one a diff wrote to disk`);
  const to = changesetDirOf(dir, plan.id);
  // Whose it is, for the sweep of a folder a crash left before the plan file or its journal row was written.
  writeFileSync(join(from, 'dataset'), plan.dataset, { mode: 0o600 });
  persistChangeset(from, to);
  return { ...plan.changeset, ...changesetData(to) };
}

/** The 1-based source file lines of record ids of a plan (A3: server row errors back to the export). */
export function planLines(dir: string, planId: string, legacy: LegacyRunFacts | null, ids: Iterable<string>): Map<string, number> {
  if (legacy?.lines) {
    const lines = legacy.lines;
    return new Map([...ids].flatMap((id) => (lines[id] !== undefined ? [[id, lines[id]] as const] : [])));
  }
  return changesetLines(changesetDirOf(dir, planId), ids);
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
export async function copyPrivately(from: string, to: string, links: LinkPolicy = NEVER_FOLLOW): Promise<string> {
  ensurePlanDir(dirname(to));
  // The export is opened as its read was (a link only where allowed, never a FIFO that would block).
  const src = await openRegularFile(from, links);
  const fd = openPrivate(to);
  try {
    // The copy is hashed while it is copied (one pass over the bytes): the caller checks it against the plan's.
    const hash = createHash('sha256');
    const tap = new Transform({
      transform(chunk: Buffer, _enc, done) {
        hash.update(chunk);
        done(null, chunk);
      },
    });
    await pipeline(fdReadStream(src.fd), tap, createWriteStream(to, { fd, autoClose: false }));
    fsyncSync(fd);
    return hash.digest('hex');
  } finally {
    closeSync(fd);
    await closeFile(src.fd);
  }
}

/** Write the plan atomically (temp file, fsync, rename) before anything is sent; 0600 in a folder made 0700 (ensurePlanDir). Only the ledger calls it. */
export function savePlan(dir: string, plan: SyncPlan): void {
  ensurePlanDir(dir);
  const file = join(dir, `${plan.id}.json`);
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

/** Load a saved plan with its changeset; null when the plan file or its changeset folder is gone. */
export function loadPlan(dir: string, planId: string): LoadedPlan | null {
  const file = join(dir, `${planId}.json`);
  if (!existsSync(file)) return null;
  let saved: SyncPlan | LegacyPlanFile;
  try {
    saved = JSON.parse(readFileSync(file, 'utf8')) as typeof saved;
  } catch (cause) {
    throw new ConnectorError('PLAN_FILE_CORRUPT', `Plan file ${file} is unreadable.`, { action: 'stop', cause, context: { file } });
  }
  const legacy = isLegacyPlan(saved) ? saved : null;
  const plan = legacy ? fromExecPlan(legacy) : (saved as SyncPlan);
  const cs = legacy ? legacy.changeset : plan.changeset;
  let changeset: Changeset;
  if (isLegacy(cs)) changeset = fromLegacy(cs);
  else {
    const data = changesetDirOf(dir, planId);
    if (!existsSync(data)) return null;
    changeset = { ...cs, ...changesetData(data) };
  }
  const facts = legacy ? { ...(legacy.approved ? { approved: true } : {}), ...(legacy.refused ? { refused: legacy.refused } : {}), ...(legacy.lines ? { lines: legacy.lines } : {}) } : null;
  return { plan, changeset, legacy: facts };
}

/** The changeset without the writes the server refused (names as journaled: post:, patch:, delete: and the id). */
export function withoutRefused(cs: Changeset, refused: ReadonlySet<string>): Changeset {
  if (refused.size === 0) return cs;
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

/** A plan file as written before issue 12: the execution half of a plan (ExecPlan), resumed after the upgrade. */
interface LegacyPlanFile extends LegacyRunFacts {
  planId: string;
  dataset: string;
  path: ApplyPath;
  direct: boolean;
  stageOnly: boolean;
  baseVersion: number;
  baseEtag: string | null;
  baseCount: number;
  resultCount: number;
  changeset: ChangesetSummary | LegacyChangeset;
  expected: DraftCounts;
  configFlags: PublishOptions;
  heldBy?: string | null;
  requiredFlags?: PublishOptions;
  source: SourceIdentity | null;
  file: string | null;
  headerLine?: number;
  upload?: PlanUpload | null;
  createdAt: number;
}

function isLegacyPlan(p: SyncPlan | LegacyPlanFile): p is LegacyPlanFile {
  return typeof (p as LegacyPlanFile).planId === 'string' && (p as SyncPlan).id === undefined;
}

/** The plan an ExecPlan file stands for (its decisions as made then; what it did not record is left neutral). */
function fromExecPlan(l: LegacyPlanFile): SyncPlan {
  const cs = l.changeset;
  const summary: ChangesetSummary = isLegacy(cs)
    ? { ownership: cs.ownership, counts: cs.counts, digest: cs.digest, foreignEdits: cs.foreignEdits, head: fromLegacy(cs).head }
    : cs;
  const flags = { allow_mass_delete: !!l.configFlags.allow_mass_delete, allow_empty: !!l.configFlags.allow_empty };
  const required = { allow_mass_delete: !!l.requiredFlags?.allow_mass_delete, allow_empty: !!l.requiredFlags?.allow_empty };
  return {
    id: l.planId,
    supersedes: null,
    dataset: l.dataset,
    path: l.path,
    ownership: summary.ownership,
    baseVersion: l.baseVersion,
    baseEtag: l.baseEtag,
    baseCount: l.baseCount,
    resultCount: l.resultCount,
    digest: summary.digest,
    counts: summary.counts,
    expected: l.expected,
    operations: [],
    changeset: summary,
    replace: null,
    publish: { staging: !l.direct, publishBy: 'connector', options: flags },
    direct: l.direct,
    stageOnly: l.stageOnly,
    unsent: false,
    keyShown: null,
    keyWhy: null,
    guards: { holds: !!l.heldBy, results: [], requiredFlags: required, connectorFlags: flags },
    held: !!l.heldBy,
    heldBy: l.heldBy ?? null,
    requiredFlags: l.requiredFlags ?? {},
    configFlags: l.configFlags,
    blocked: null,
    estimate: { perRecord: null, replace: null },
    foreignEdits: summary.foreignEdits,
    source: l.source,
    file: l.file,
    headerLine: l.headerLine ?? 1,
    upload: l.upload ?? null,
    reason: 'a plan made before the upgrade',
    createdAt: l.createdAt,
  };
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

/** Remove a plan file once nothing can need it any more. Only the ledger calls it. */
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
