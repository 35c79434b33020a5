import { z } from 'zod';
import { httpError, validationFailed, zodIssues } from '../http-error.js';
import { json, type ApiResponse } from '../http-types.js';
import type { VersionState } from '../dataset-state.js';
import type { Route, RouteContext } from '../context.js';

function versionParam(ctx: RouteContext): number {
  const raw = ctx.params.version as string;
  if (!/^\d{1,9}$/.test(raw)) throw httpError(404, 'VERSION_NOT_FOUND', `version ${raw} does not exist`);
  return Number(raw);
}

function summaryItem(ctx: RouteContext, v: VersionState) {
  return {
    version: v.version,
    status: v.status,
    base_version: v.baseVersion,
    created_at: new Date(v.createdAt).toISOString(),
    counts: { ...ctx.ds.summaryOf(v).counts },
  };
}

/** A18: GET /versions, newest first. */
function listVersions(ctx: RouteContext): ApiResponse {
  const { ds, now } = ctx;
  ds.expireDrafts(now);
  const versions = [...ds.versions.values()].sort((a, b) => b.version - a.version).map((v) => summaryItem(ctx, v));
  return json(200, { active_version: ds.activeVersion, versions }, { etag: ds.etag });
}

/** A19: GET /versions/{v}: counts and the first 20 changes in record_id order. */
function getVersion(ctx: RouteContext): ApiResponse {
  const { ds, now } = ctx;
  ds.expireDrafts(now);
  const n = versionParam(ctx);
  const v = ds.versions.get(n);
  if (!v) throw httpError(404, 'VERSION_NOT_FOUND', `version ${n} does not exist`);
  const { sample } = ds.summaryOf(v);
  return json(200, { ...summaryItem(ctx, v), sample: sample.map((s) => ({ ...s })) }, { etag: ds.etag });
}

/** A20: publish body `{}` or `{"options": {...}}` (A34: nothing else). */
const publishBodySchema = z
  .object({
    options: z.object({ allow_mass_delete: z.boolean().optional(), allow_empty: z.boolean().optional() }).strict().optional(),
  })
  .strict();

/** A20, A5, Rule 3: POST /versions/{v}/publish. */
function publishVersion(ctx: RouteContext): ApiResponse {
  const { ds, now, emulator } = ctx;
  const parsed = publishBodySchema.safeParse(ctx.json ?? {});
  if (!parsed.success) {
    throw validationFailed('the publish body is not valid', { issues: zodIssues(parsed.error) });
  }
  const n = versionParam(ctx);
  emulator.requireNoJob(ds.id);
  const draft = ds.publishable(n, now, parsed.data.options ?? {});
  ds.activate(draft);
  emulator.counters.publishes++;
  return json(200, { version: n, status: 'active' }, { etag: ds.etag });
}

/** A21: DELETE /versions/{v} discards a pending draft (204). */
function discardVersion(ctx: RouteContext): ApiResponse {
  const { ds, now, emulator } = ctx;
  ds.expireDrafts(now);
  const n = versionParam(ctx);
  const v = ds.versions.get(n);
  if (!v) throw httpError(404, 'VERSION_NOT_FOUND', `version ${n} does not exist`);
  if (v.status === 'expired') throw httpError(410, 'DRAFT_EXPIRED', `draft ${n} is older than 24 hours`);
  if (v.status === 'active' || v.status === 'superseded') {
    throw httpError(409, 'CONFLICT', `version ${n} was published and cannot be discarded`, { version: n, version_status: v.status });
  }
  // Discarding an already discarded draft answers 204 again, so a retried DELETE is harmless.
  if (v.status === 'draft') {
    ds.discard(v);
    emulator.counters.discards++;
  }
  return { status: 204, headers: { etag: ds.etag } };
}

/** Routes of /versions. */
export const versionRoutes: Route[] = [
  { method: 'GET', pattern: '/versions', role: 'read', write: false, body: 'none', query: [], handle: listVersions },
  { method: 'GET', pattern: '/versions/:version', role: 'read', write: false, body: 'none', query: [], handle: getVersion },
  { method: 'POST', pattern: '/versions/:version/publish', role: 'publish', write: true, body: 'json', query: [], handle: publishVersion },
  { method: 'DELETE', pattern: '/versions/:version', role: 'publish', write: true, body: 'none', query: [], handle: discardVersion },
];
