import { sha256 } from '../model/canonical.js';
import type { DatasetRecord, RecordField, RecordPatch } from '../model/record.js';
import type { SnapshotInfo } from '../snapshot/types.js';
import type { Changeset, ChangesetCounts, ForeignEditNote } from './changeset.js';
import { jobEstimate, perRecordCost, replaceCost, secs, type CostEstimate, type RateBudget } from './cost.js';
import { evaluateGuards, guardCountsOf, type GuardEvaluation } from './guards.js';
import type { Policy } from './policy.js';
import { withValueGuards } from './value-guards.js';

export type { RateBudget, CostEstimate } from './cost.js';

/** Roles a dataset key can have; a legacy key has all of them (A12). */
export type KeyRole = 'read' | 'write' | 'replace' | 'publish';

/** none: nothing to send; per_record: POST/PATCH/DELETE; replace: PUT /records; import: POST /imports. */
export type SyncPath = 'none' | 'per_record' | 'replace' | 'import';

/** One per-record request. */
export type PlanOperation =
  | { op: 'add'; record_id: string; record: DatasetRecord }
  | { op: 'change'; record_id: string; fields: RecordField[]; patch: RecordPatch }
  | { op: 'delete'; record_id: string };

/** What the planner needs of the state database (SnapshotInfo satisfies it). */
export type PlanSnapshotInfo = Pick<SnapshotInfo, 'activeVersion' | 'etag' | 'lastSource' | 'lastJob'>;

/** Facts about the source file that only the reader knows. */
export interface PlanSource {
  /** Data rows in the export (for the row-drop guard); default: the record count. */
  rowCount?: number;
  /** The server can map the file itself into exactly our records (A14; see importable.ts). */
  importable?: boolean;
  /** Why it cannot, for the plan's reason. */
  notImportableReason?: string;
  fileBytes?: number;
}

/** Optional inputs of planSync. */
export interface PlanOptions {
  /** Plan id; default derived from the changeset and base version (pure). */
  id?: string;
  source?: PlanSource;
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

/** The plan of one sync: what `dataset-connector plan` prints and exactly what execute runs. Serialisable. */
export interface SyncPlan {
  id: string;
  path: SyncPath;
  ownership: Policy['ownership'];
  baseVersion: number | null;
  baseEtag: string | null;
  digest: string;
  counts: ChangesetCounts;
  /** per_record: the first requests (up to HEAD_OPERATIONS of each kind, to show), adds then changes then deletes. Empty otherwise. */
  operations: PlanOperation[];
  /** replace/import: what the body holds (records built by ownership.replaceRecords). */
  replace: {
    records: number;
    fromSource: number;
    carriedOver: number;
    options: { publish: boolean; allow_mass_delete: boolean; allow_empty: boolean };
  } | null;
  publish: PublishMode;
  guards: GuardEvaluation;
  /** A guard holds: stage only, a person approves or discards. */
  held: boolean;
  /** The key's roles allow no way to send this change. */
  blocked: { code: 'KEY_ROLES'; message: string } | null;
  estimate: { perRecord: CostEstimate | null; replace: CostEstimate | null };
  foreignEdits: ForeignEditNote[];
  /** Why this path and mode, with the crossover maths. */
  reason: string;
}

/** Choose how to send a changeset (pure: no clock, disk or network). */
export function planSync(
  changeset: Changeset,
  snapshotInfo: PlanSnapshotInfo,
  keyRoles: readonly KeyRole[],
  policy: Policy,
  rateBudget: RateBudget,
  options: PlanOptions = {},
): SyncPlan {
  const c = changeset.counts;
  const can = { write: keyRoles.includes('write'), replace: keyRoles.includes('replace'), publish: keyRoles.includes('publish') };
  const sourceRows = options.source?.rowCount ?? c.source;
  const guards = withValueGuards(evaluateGuards(guardCountsOf(c, sourceRows), snapshotInfo, policy), changeset.values, c.changes + c.unchanged, policy.guards.values);
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

  if (ops > 0 && path !== 'none') {
    if (guards.holds) {
      const held = guards.results.filter((r) => r.holds).map((r) => `${r.guard}: ${r.message}`);
      reasons.push(`held for a person (dataset-connector approve | discard): ${held.join('; ')}`);
    } else if (!can.publish) reasons.push('staged: the key has no publish role, a person must publish it in the portal');
    else if (direct) reasons.push(policy.staging ? `direct publish: ${ops} ≤ direct_publish_max_changes` : 'direct publish: staging off');
    else reasons.push('staged, checked against the plan, then published');
  }
  if (c.notOwned) reasons.push(`${c.notOwned} records not owned by the connector are left alone`);

  const publish: PublishMode = { staging, publishBy, options: guards.holds ? noFlags() : guards.connectorFlags };
  const isReplace = path === 'replace' || path === 'import';
  return {
    id: options.id ?? planId(changeset, snapshotInfo, path, staging),
    path,
    ownership: changeset.ownership,
    baseVersion: snapshotInfo.activeVersion,
    baseEtag: snapshotInfo.etag,
    digest: changeset.digest,
    counts: c,
    operations: path === 'per_record' ? operationsOf(changeset) : [],
    replace: isReplace
      ? { records: c.result, fromSource: c.source, carriedOver: c.notOwned, options: { publish: !staging, ...publish.options } }
      : null,
    publish,
    guards,
    held: guards.holds && path !== 'none',
    blocked,
    estimate: { perRecord, replace },
    foreignEdits: changeset.foreignEdits,
    reason: reasons.join('; '),
  };
}

/** Why the file cannot be uploaded as is (null: it can). An upload carries nothing over and keeps no server edit. */
export function importBlocker(changeset: Changeset, policy: Policy, source: PlanSource | undefined): string | null {
  if (!policy.replace.prefer_import) return 'replace.prefer_import is off';
  if (!source?.importable) return source?.notImportableReason ?? 'the server cannot map the source file';
  if (changeset.ownership === 'source' && changeset.counts.notOwned > 0) return `${changeset.counts.notOwned} records not owned by the connector must be carried over`;
  if (changeset.foreignEdits.some((f) => f.resolution === 'keep')) return 'fields edited on the server are kept (on_foreign_edit: keep)';
  return null;
}

/** The first operations, from the changeset's head (held in memory: the planner reads no disk). */
function operationsOf(cs: Changeset): PlanOperation[] {
  const out: PlanOperation[] = [];
  for (const r of cs.head.adds) out.push({ op: 'add', record_id: r.record_id, record: r });
  for (const ch of cs.head.changes) out.push({ op: 'change', record_id: ch.record_id, fields: ch.fields, patch: ch.patch });
  for (const d of cs.head.deletes) out.push({ op: 'delete', record_id: d.record_id });
  return out;
}

function planId(cs: Changeset, info: PlanSnapshotInfo, path: SyncPath, staging: boolean): string {
  return `plan-${sha256(`${cs.digest}|${info.activeVersion ?? 'none'}|${path}|${staging}`).slice(0, 20)}`;
}

function noFlags(): PublishMode['options'] {
  return { allow_mass_delete: false, allow_empty: false };
}
