import { basename, join } from 'node:path';
import type { PublishOptions } from '../../api/wire.js';
import { sha256 } from '../../model/canonical.js';
import type { DatasetRecord, RecordField, RecordPatch } from '../../model/record.js';
import type { KeyChannel, KeyShown, SnapshotInfo, SourceIdentity } from '../../snapshot/types.js';
import type { Changeset, ChangesetCounts, ChangesetHead, ChangesetSummary, ForeignEditNote } from './changeset.js';
import { channelOf, decideStaging, stagingNote } from './key-staging.js';
import { jobEstimate, perRecordCost, replaceCost, secs, type CostEstimate, type RateBudget } from './cost.js';
import { evaluateGuards, guardCountsOf, type GuardEvaluation } from './guards.js';
import type { Policy } from '../../config/policy.js';
import { withValueGuards } from './value-guards.js';

export type { RateBudget, CostEstimate } from './cost.js';

/** Roles a dataset key can have; a legacy key has all of them (A12). */
export type KeyRole = 'read' | 'write' | 'replace' | 'publish';

/** none: nothing to send; per_record: POST/PATCH/DELETE; replace: PUT /records; import: POST /imports. */
export type SyncPath = 'none' | 'per_record' | 'replace' | 'import';

/** One per-record request. */
export type PlanOperation =
  | { op: 'add'; record_id: string; record: DatasetRecord }
  | { op: 'change'; record_id: string; fields: RecordField[]; patch: RecordPatch; record: DatasetRecord }
  | { op: 'delete'; record_id: string };

/** What the planner needs of the state database (SnapshotInfo satisfies it). */
export type PlanSnapshotInfo = Pick<SnapshotInfo, 'activeVersion' | 'etag' | 'lastSource' | 'lastJob'>;

/** Facts about the source file that only the reader knows. */
export interface PlanSource {
  /** The export, as named to the sync. */
  file?: string;
  /** sha256 of its bytes, as read and diffed. */
  fileHash?: string;
  /** Data rows in the export (for the row-drop guard); default: the record count. */
  rowCount?: number;
  /** The server can map the file itself into exactly our records (A14; see importable.ts). */
  importable?: boolean;
  /** Why it cannot, for the plan's reason. */
  notImportableReason?: string;
  /** The upload's `mapping` and `encoding` fields (A14), when importable. */
  uploadFields?: { mapping: Record<string, string>; encoding: string };
  /** 1-based file line of the header: an upload's row errors count data lines after it (A3). */
  headerLine?: number;
  fileBytes?: number;
  /** Why a feed's rows took none of the file's rows: said with the empty_result guard, which holds such a change. */
  rowsNote?: string;
}

/** The feed a plan is made of (issue 13): the ledger records its values as the feed state when the plan is published. */
export interface PlanFeed {
  name: string;
  role: 'full' | 'update' | 'changes';
  /** The fields it owns (maps, record_id aside). */
  fields: string[];
  /** The time of its file (ms), which precedence: newest compares. */
  at: number;
  /** An update feed's missing strategy at work: records it changes of those it may change (guarded like deletes). */
  missing?: { strategy: string; count: number; base: number };
}

/**
 * One file of a plan several files made (issue 13, the daemon's coalescing): its feed as PlanFeed says, the
 * file, and the name of its state entries file in the plan's changeset folder (feed-state-file.ts: what the
 * file's merge made its feed's state, given the files before it). The ledger records each file's entries as its
 * feed's state, oldest first, when the plan is published or changed nothing.
 */
export interface PlanBatchFile extends PlanFeed {
  file: string;
  sha256: string;
  state: string;
}

/** What the key in use is known to do (issue 11, A12; key-staging.ts). */
export interface PlanKey {
  /** Its roles; not readable through the API, so every role is assumed and refusals are learnt at run time (KNOWN_ROLES). */
  roles: readonly KeyRole[];
  /** What it has shown with staged requests, per kind of request. */
  shown: Record<KeyChannel, KeyShown>;
}

/** The key's roles are not readable through the API: plan with all, learn refusals at run time (publish_denied, 403). */
export const KNOWN_ROLES: readonly KeyRole[] = ['read', 'write', 'replace', 'publish'];

/** Every input of planSync: the plan is a function of these alone. */
export interface PlanInputs {
  dataset: string;
  changeset: Changeset;
  /** The snapshot as reconciled with the server (activeVersion: the server's). */
  snapshot: PlanSnapshotInfo;
  key: PlanKey;
  policy: Policy;
  rateBudget: RateBudget;
  source?: PlanSource;
  /** Stage only, never publish (`sync --no-publish`). */
  stageOnly?: boolean;
  /** Where plan files live: an import plan names its upload copy there. */
  planDir: string;
  /** When the plan is made (ms): part of its id (a plan made again of the same change is another plan) and its source identity. */
  now: number;
  /** The plan this one replaces (a fall-back: import refused, the server moved on). */
  supersedes?: string | null;
  /** Plan id; default derived from the changeset, base version, decisions and `now`. */
  id?: string;
  /** The feed whose file this plan is made of (issue 13); absent for a restore. */
  feed?: PlanFeed;
  /** Several files made this plan (issue 13): each, oldest first; `feed` is then the lead's (the full feed's, else the first's). */
  batch?: PlanBatchFile[];
  /** The source is a history point, not an export (issue 14): the plan is a restore's. */
  restore?: PlanRestore;
}

/** The history point a restore brings back (issue 14). */
export interface PlanRestore {
  toSeq: number;
  toVersion: number | null;
  at: number;
}

/** How the change is published. */
export interface PublishMode {
  /** Writes/replace go to a draft first (publish=false / options.publish=false). */
  staging: boolean;
  /** Who publishes the draft: the connector after checking counts, or a person (no publish role, or a guard held it). */
  publishBy: 'connector' | 'person' | 'none';
  /** Flags the connector sends with the publish (only when the policy opts in explicitly). */
  options: { allow_mass_delete: boolean; allow_empty: boolean };
}

/** The request path of a plan that sends something. */
export type ApplyPath = Exclude<SyncPath, 'none'>;

/** Change counts as the server reports them for a draft (A15/A19). */
export interface DraftCounts {
  added: number;
  changed: number;
  deleted: number;
}

/** What an import plan uploads. */
export interface PlanUpload {
  /** The copy of the export in the plan directory (made when the plan begins). */
  path: string;
  filename: string;
  contentType: string;
  /** sha256 of its bytes (equal to the export read and diffed). */
  sha256: string;
  mapping: Record<string, string>;
  encoding: string;
}

/**
 * The plan of one sync: what `dataset-connector plan` prints, what is saved
 * (plan file) before the first request, executed, resumed and approved.
 * Serialisable and never changed once made: a fall-back is a new plan that
 * names this one in `supersedes` (ledger.ts).
 */
export type SyncPlan = Readonly<SyncPlanFields>;

/** The fields of a SyncPlan (read only once made: the plan printed is the plan that runs, issue 12). */
interface SyncPlanFields {
  id: string;
  /** The plan this one replaces, or null. */
  supersedes: string | null;
  dataset: string;
  path: SyncPath;
  ownership: Policy['ownership'];
  /** Active version and ETag the plan was made against (If-Match). */
  baseVersion: number | null;
  baseEtag: string | null;
  /** Records in the dataset before (snapshot) and after the change. */
  baseCount: number;
  resultCount: number;
  digest: string;
  counts: ChangesetCounts;
  /** What the draft is to hold, as the server counts it (A19). */
  expected: DraftCounts;
  /** per_record: the first requests (up to HEAD_OPERATIONS of each kind, to show), adds then changes then deletes. Empty otherwise. */
  operations: PlanOperation[];
  /** The changeset without its lists (those are in the plan's changeset folder once it begins). */
  changeset: ChangesetSummary;
  /** replace/import: what the body holds (records built by ownership.replaceRecords). */
  replace: {
    records: number;
    fromSource: number;
    carriedOver: number;
    options: { publish: boolean; allow_mass_delete: boolean; allow_empty: boolean };
  } | null;
  publish: PublishMode;
  /** Per-record writes publish directly (no draft); decided with what the key has shown. */
  direct: boolean;
  /** Stage only: leave the verified draft for a person (sync option publish=false). */
  stageOnly: boolean;
  /** Issue 11, A12: kept unsent for a person, the key having not shown that it stages. */
  unsent: boolean;
  /** What the key has shown on this plan's kind of request (null: nothing yet). */
  keyShown: KeyShown;
  /** What that means for this plan (unsent, sent staged this once, direct), or null when nothing is to say. */
  keyWhy: string | null;
  guards: GuardEvaluation;
  /** A guard holds: stage only, a person approves or discards. */
  held: boolean;
  /** Why the plan-time guards hold this change, or null when none does. */
  heldBy: string | null;
  /** A5: the flags the change needs to be published (what a person's approve sends). */
  requiredFlags: PublishOptions;
  /** Flags the dataset config sets explicitly; never added on the connector's own (issue 4). */
  configFlags: PublishOptions;
  /** The key's roles allow no way to send this change. */
  blocked: { code: 'KEY_ROLES'; message: string } | null;
  estimate: { perRecord: CostEstimate | null; replace: CostEstimate | null };
  foreignEdits: ForeignEditNote[];
  source: SourceIdentity | null;
  /** Why a feed's rows took none of the file's rows (PlanSource.rowsNote), said again by the draft's empty_result guard. */
  rowsNote?: string;
  file: string | null;
  /** 1-based file line of the header (preamble lines + 1): an upload's row errors count data lines after it (A3). */
  headerLine: number;
  /** path import: the copy of the file to upload and its fields (A14). */
  upload: PlanUpload | null;
  /** Why this path and mode, with the crossover maths. */
  reason: string;
  createdAt: number;
  /** A restore (issue 14): the history point it brings back; absent for a sync of an export. */
  restore?: PlanRestore;
  /** The feed whose file it is made of (issue 13). */
  feed?: PlanFeed;
  /** The files it is made of, when several (issue 13). */
  batch?: PlanBatchFile[];
}

/** Choose how to send a changeset (pure: no clock, disk or network; every input is in `inp`). */
export function planSync(inp: PlanInputs): SyncPlan {
  const { changeset, snapshot: snapshotInfo, policy, rateBudget } = inp;
  const keyRoles = inp.key.roles;
  const options = { source: inp.source };
  const c = changeset.counts;
  const can = { write: keyRoles.includes('write'), replace: keyRoles.includes('replace'), publish: keyRoles.includes('publish') };
  const sourceRows = options.source?.rowCount ?? c.source;
  // Issue 14: the value guards from the diff's tally of the records present before and after.
  const guards = withValueGuards(evaluateGuards({ ...guardCountsOf(c, sourceRows), missing: inp.feed?.missing, emptyWhy: options.source?.rowsNote }, snapshotInfo, policy), changeset.values, c.changes + c.unchanged, policy.guards.values);
  const ops = c.adds + c.changes + c.deletes;
  const reasons: string[] = [];

  // Publish mode first: it changes the request count of both paths.
  const direct =
    can.publish && !guards.holds && (!policy.staging || (policy.direct_publish_max_changes > 0 && ops <= policy.direct_publish_max_changes));
  const staging = !direct;
  const publishBy: PublishMode['publishBy'] = ops === 0 ? 'none' : can.publish && !guards.holds ? 'connector' : 'person';
  const publishRequests = staging ? (publishBy === 'connector' ? 2 : 1) : 0; // GET /versions/{v} (+ publish)

  const perRecord = can.write && ops > 0 ? perRecordCost(ops, publishRequests, rateBudget) : null;
  const job = jobEstimate(c.result, snapshotInfo.lastJob, policy);
  const readPages = changeset.ownership === 'source' && c.notOwned > 0 ? Math.ceil(c.snapshot / 1000) : 0;
  const replace =
    can.replace && ops > 0
      ? replaceCost({ readPages, publishRequests, job, bodyBytes: options.source?.fileBytes }, rateBudget, policy)
      : null;

  let path: SyncPath;
  let blocked: SyncPlan['blocked'] = null;
  if (ops === 0) {
    path = 'none';
    reasons.push(c.adopted ? `nothing to send; ${c.adopted} records adopted as owned` : 'nothing to send: the dataset equals the source');
  } else if (!perRecord && !replace) {
    path = 'none';
    blocked = { code: 'KEY_ROLES', message: 'the key has neither the write nor the replace role; reissue it with one of them' };
    reasons.push(blocked.message);
  } else if (!replace) {
    path = 'per_record';
    reasons.push(`per-record: the key has no replace role; ${perRecord!.detail}`);
  } else if (!perRecord) {
    path = 'replace';
    reasons.push(`replace: the key has no write role; ${replace.detail}`);
  } else if (policy.replace.max_per_record_changes !== undefined && ops > policy.replace.max_per_record_changes) {
    path = 'replace';
    reasons.push(`replace: ${ops} changes exceed replace.max_per_record_changes ${policy.replace.max_per_record_changes}`);
  } else if (perRecord.ms <= replace.ms) {
    path = 'per_record';
    reasons.push(`per-record ${secs(perRecord.ms)} ≤ replace ${secs(replace.ms)}: per-record ${perRecord.detail}; replace ${replace.detail}`);
  } else {
    path = 'replace';
    reasons.push(`replace ${secs(replace.ms)} < per-record ${secs(perRecord.ms)}: per-record ${perRecord.detail}; replace ${replace.detail}`);
  }

  if (path === 'replace') {
    const whyNot = importBlocker(changeset, policy, options.source);
    if (whyNot === null) {
      path = 'import';
      reasons.push('the server maps the source file exactly as the connector does: upload it (POST /imports)');
    } else if (policy.replace.prefer_import) reasons.push(`PUT /records, not an upload: ${whyNot}`);
  }

  const stageOnly = inp.stageOnly ?? false;
  const heldBy = guards.holds && path !== 'none' ? guards.results.filter((r) => r.holds).map((r) => `${r.guard}: ${r.message}`).join('; ') : null;
  if (ops > 0 && path !== 'none') {
    if (guards.holds) reasons.push(`held for a person (dataset-connector approve | discard): ${heldBy}`);
    else if (!can.publish) reasons.push('staged: the key has no publish role, a person must publish it in the portal');
    else if (direct) reasons.push(policy.staging ? `direct publish: ${ops} ≤ direct_publish_max_changes` : 'direct publish: staging off');
    else reasons.push('staged, checked against the plan, then published');
  }
  if (c.notOwned) reasons.push(`${c.notOwned} records not owned by the connector are left alone`);

  // Issue 11 (key-staging.ts): what the key has shown decides whether the change may be sent staged, or directly.
  const keyShown = path === 'none' ? null : inp.key.shown[channelOf(path)];
  const keyDecision =
    path === 'none' ? null : decideStaging({ path, heldBy: heldBy ? 'held by a guard' : null, stageOnly, direct: direct && !stageOnly }, keyShown);

  const publish: PublishMode = { staging, publishBy, options: guards.holds ? noFlags() : guards.connectorFlags };
  const isReplace = path === 'replace' || path === 'import';
  const id = inp.id ?? planId(changeset, snapshotInfo, path, staging, inp.now);
  const src = options.source;
  const uploadFields = src?.uploadFields;
  return {
    id,
    supersedes: inp.supersedes ?? null,
    dataset: inp.dataset,
    path,
    ownership: changeset.ownership,
    baseVersion: snapshotInfo.activeVersion,
    baseEtag: snapshotInfo.activeVersion === null ? null : `"v${snapshotInfo.activeVersion}"`,
    baseCount: c.snapshot,
    resultCount: c.result,
    digest: changeset.digest,
    counts: c,
    expected: { added: c.adds, changed: c.changes, deleted: c.deletes },
    operations: path === 'per_record' ? operationsOf(changeset.head) : [],
    changeset: {
      ownership: changeset.ownership,
      counts: c,
      digest: changeset.digest,
      foreignEdits: changeset.foreignEdits,
      head: changeset.head,
      ...(changeset.values ? { values: changeset.values } : {}),
    },
    replace: isReplace
      ? { records: c.result, fromSource: c.source, carriedOver: c.notOwned, options: { publish: !staging, ...publish.options } }
      : null,
    publish,
    direct: keyDecision?.direct ?? false,
    stageOnly,
    unsent: keyDecision?.unsent ?? false,
    keyShown,
    keyWhy: keyDecision?.why ?? null,
    guards,
    held: guards.holds && path !== 'none',
    heldBy,
    requiredFlags: guards.requiredFlags,
    configFlags: publish.options,
    blocked,
    estimate: { perRecord, replace },
    foreignEdits: changeset.foreignEdits,
    source: src?.fileHash !== undefined ? { fileHash: src.fileHash, rowCount: sourceRows, at: inp.now } : null,
    ...(src?.rowsNote ? { rowsNote: src.rowsNote } : {}),
    // A restore has no export: nothing of it goes to a reject file, and why names the restore instead.
    file: inp.restore ? null : (src?.file ?? null),
    headerLine: src?.headerLine ?? 1,
    upload:
      path === 'import' && src?.file !== undefined && src.fileHash !== undefined && uploadFields
        ? { path: uploadCopyPath(inp.planDir, id), filename: basename(src.file), contentType: 'text/csv', sha256: src.fileHash, ...uploadFields }
        : null,
    reason: reasons.join('; ') + (keyDecision ? stagingNote(keyDecision) : ''),
    createdAt: inp.now,
    ...(inp.restore ? { restore: inp.restore } : {}),
    ...(inp.feed ? { feed: inp.feed } : {}),
    ...(inp.batch ? { batch: inp.batch } : {}),
  };
}

/** Where an import plan keeps its copy of the file. */
export function uploadCopyPath(dir: string, planId: string): string {
  return join(dir, `${planId}.upload`);
}

/** Why the file cannot be uploaded as is (null: it can). An upload carries nothing over and keeps no server edit. */
export function importBlocker(changeset: Changeset, policy: Policy, source: PlanSource | undefined): string | null {
  if (!policy.replace.prefer_import) return 'replace.prefer_import is off';
  if (!source?.importable) return source?.notImportableReason ?? 'the server cannot map the source file';
  if (changeset.ownership === 'source' && changeset.counts.notOwned > 0) return `${changeset.counts.notOwned} records not owned by the connector must be carried over`;
  if (changeset.foreignEdits.some((f) => f.resolution === 'keep')) return 'fields edited on the server are kept (on_foreign_edit: keep)';
  return null;
}

/**
 * The per-record requests of a changeset's lists, in the one fixed order
 * (adds, changes, deletes; each in record_id order): the plan shows the first
 * of them (its head), execute sends them all and a resumed run walks the same list.
 */
export function* planOperations(cs: Pick<Changeset, 'adds' | 'changes' | 'deletes'>): Generator<PlanOperation> {
  for (const r of cs.adds) yield { op: 'add', record_id: r.record_id, record: r };
  for (const ch of cs.changes) yield { op: 'change', record_id: ch.record_id, fields: ch.fields, patch: ch.patch, record: ch.record };
  for (const d of cs.deletes) yield { op: 'delete', record_id: d.record_id };
}

/** The journal step name of a per-record request (`post:<id>`…, as journaled since issue 3). */
export function stepName(op: PlanOperation): string {
  return `${op.op === 'add' ? 'post' : op.op === 'change' ? 'patch' : 'delete'}:${op.record_id}`;
}

/** The first operations, from the changeset's head (held in memory: the planner reads no disk). */
function operationsOf(head: ChangesetHead): PlanOperation[] {
  return [...planOperations(head)];
}

function planId(cs: Changeset, info: PlanSnapshotInfo, path: SyncPath, staging: boolean, now: number): string {
  return `plan-${sha256(`${cs.digest}|${info.activeVersion ?? 'none'}|${path}|${staging}`).slice(0, 20)}-${now.toString(36)}`;
}

function noFlags(): PublishMode['options'] {
  return { allow_mass_delete: false, allow_empty: false };
}
