import { z } from 'zod';
import { recordSchema, type DatasetRecord } from '../model/record.js';
import { parseJsonBody } from './body.js';
import type { Emulator } from './emulator.js';
import { EmulatorHttpError, httpError, validationFailed, zodIssues } from './http-error.js';
import { json, type ApiRequest, type ApiResponse } from './http-types.js';
import { ROLES, type Role } from './types.js';

/** Path prefix of the control routes the real API does not have. */
export const ADMIN_PREFIX = '/__emulator';

const editSchema = z
  .object({ upsert: z.array(recordSchema).optional(), delete: z.array(z.string()).optional(), records: z.array(recordSchema).optional() })
  .strict();
const faultSchema = z
  .object({
    method: z.string().optional(),
    path: z.string().optional().describe('regex source matched against the URL path'),
    count: z.number().positive().optional(),
    status: z.number().int().min(100).max(599).optional(),
    code: z.string().optional(),
    message: z.string().optional(),
    retry_after_s: z.number().min(0).optional(),
    reset: z.boolean().optional(),
    delay_ms: z.number().min(0).optional(),
    apply_then_drop: z.boolean().optional(),
  })
  .strict();
const schemas = {
  dataset: z.object({ id: z.string().min(1), name: z.string().optional(), api_enabled: z.boolean().optional(), records: z.array(recordSchema).optional() }).strict(),
  key: z.object({ dataset: z.string(), key: z.string().optional(), roles: z.array(z.enum(ROLES)).optional(), legacy: z.boolean().optional() }).strict(),
  revoke: z.object({ key: z.string() }).strict(),
  reissue: z
    .object({ key: z.string(), grace_ms: z.number().min(0), new_key: z.string().optional(), roles: z.array(z.enum(ROLES)).optional() })
    .strict(),
  api: z.object({ enabled: z.boolean() }).strict(),
  advance: z.object({ ms: z.number().min(0) }).strict(),
  settings: z
    .object({ job_duration_ms: z.number().min(0).optional(), rate_limit_per_minute: z.number().int().min(1).optional(), row_errors: z.enum(['job', 'sync']).optional(), legacy_jobs: z.enum(['publish', 'stage']).optional() })
    .strict(),
};

function body<T>(schema: z.ZodType<T>, req: ApiRequest): T {
  const parsed = schema.safeParse(parseJsonBody(req) ?? {});
  if (!parsed.success) throw validationFailed('the admin request body is not valid', { issues: zodIssues(parsed.error) });
  return parsed.data;
}

function settingsView(e: Emulator) {
  const s = e.settings;
  return { job_duration_ms: s.jobDurationMs, rate_limit_per_minute: s.rateLimitPerMinute, row_errors: s.rowErrors, legacy_jobs: s.legacyJobs };
}

/** The admin routes (JSON, no authentication; the emulator listens on 127.0.0.1). */
export async function handleAdmin(e: Emulator, req: ApiRequest): Promise<ApiResponse> {
  try {
    return route(e, req, req.path.slice(ADMIN_PREFIX.length).replace(/\/$/, ''));
  } catch (err) {
    if (err instanceof EmulatorHttpError) return json(err.status, err.body());
    throw err;
  }
}

function route(e: Emulator, req: ApiRequest, path: string): ApiResponse {
  const m = req.method;
  const ds = /^\/datasets\/([^/]+)(\/[a-z-]+)?$/.exec(path);
  if (ds) {
    const id = decodeURIComponent(ds[1] as string);
    const sub = ds[2] ?? '';
    if (m === 'GET' && sub === '') return json(200, e.describe(id));
    if (m === 'GET' && sub === '/records') return json(200, { records: e.records(id, req.query.get('source') === 'draft' ? 'draft' : 'active') });
    if (m === 'POST' && sub === '/api') {
      e.setApiEnabled(id, body(schemas.api, req).enabled);
      return json(200, e.describe(id));
    }
    if (m === 'POST' && (sub === '/portal-publish' || sub === '/portal-draft')) {
      const edit = body(editSchema, req) as { upsert?: DatasetRecord[]; delete?: string[]; records?: DatasetRecord[] };
      const version = sub === '/portal-publish' ? e.portalPublish(id, edit) : e.portalDraft(id, edit);
      return json(200, { version, dataset: e.describe(id) });
    }
  }
  const jobMatch = /^\/jobs\/([^/]+)$/.exec(path);
  if (jobMatch && m === 'GET') return json(200, { job: e.job(decodeURIComponent(jobMatch[1] as string)) });
  switch (`${m} ${path}`) {
    case 'GET ':
    case 'GET /state':
      e.tick();
      return json(200, {
        clock: { now: e.clock.now(), iso: e.clock.iso(), mode: e.clock.mode },
        settings: settingsView(e),
        counters: e.counters,
        datasets: [...e.datasets.keys()].map((id) => e.describe(id)),
        faults: e.faults.list().map((f) => ({ ...f, path: f.path?.toString() })),
      });
    case 'POST /datasets': {
      const b = body(schemas.dataset, req);
      e.addDataset({ id: b.id, ...(b.name ? { name: b.name } : {}), ...(b.api_enabled !== undefined ? { apiEnabled: b.api_enabled } : {}), records: (b.records ?? []) as DatasetRecord[] });
      return json(201, e.describe(b.id));
    }
    case 'POST /keys': {
      const b = body(schemas.key, req);
      const key = e.addKey({ dataset: b.dataset, ...(b.key ? { key: b.key } : {}), ...(b.roles ? { roles: b.roles as Role[] } : {}), legacy: b.legacy ?? false });
      return json(201, { key, dataset: b.dataset });
    }
    case 'POST /keys/reissue': {
      const b = body(schemas.reissue, req);
      const r = e.reissueKey({ key: b.key, graceMs: b.grace_ms, ...(b.new_key ? { newKey: b.new_key } : {}), ...(b.roles ? { roles: b.roles as Role[] } : {}) });
      const until = r.oldValidUntil === null ? null : new Date(r.oldValidUntil).toISOString();
      return json(201, { key: r.key, old_key_valid_until: until });
    }
    case 'POST /keys/revoke':
      e.revokeKey(body(schemas.revoke, req).key);
      return json(200, { revoked: true });
    case 'GET /clock':
      return json(200, { now: e.clock.now(), iso: e.clock.iso(), mode: e.clock.mode });
    case 'POST /clock/advance':
      e.clock.advance(body(schemas.advance, req).ms);
      e.tick();
      return json(200, { now: e.clock.now(), iso: e.clock.iso(), mode: e.clock.mode });
    case 'GET /faults':
      return json(200, { faults: e.faults.list().map((f) => ({ ...f, path: f.path?.toString() })) });
    case 'POST /faults': {
      const f = body(faultSchema, req);
      const id = e.faults.add({
        ...(f.method ? { method: f.method } : {}),
        ...(f.path !== undefined ? { path: new RegExp(f.path) } : {}),
        ...(f.count !== undefined ? { count: f.count } : {}),
        ...(f.status !== undefined ? { status: f.status } : {}),
        ...(f.code ? { code: f.code } : {}),
        ...(f.message ? { message: f.message } : {}),
        ...(f.retry_after_s !== undefined ? { retryAfterS: f.retry_after_s } : {}),
        ...(f.reset ? { reset: true } : {}),
        ...(f.delay_ms !== undefined ? { delayMs: f.delay_ms } : {}),
        ...(f.apply_then_drop ? { applyThenDrop: true } : {}),
      });
      return json(201, { id });
    }
    case 'DELETE /faults':
      e.faults.clear();
      return { status: 204, headers: {} };
    case 'GET /requests':
      return json(200, { requests: e.requests });
    case 'DELETE /requests':
      e.clearRequests();
      return { status: 204, headers: {} };
    case 'GET /counters':
      return json(200, e.counters);
    case 'GET /settings':
      return json(200, settingsView(e));
    case 'POST /settings':
    case 'PATCH /settings': {
      const b = body(schemas.settings, req);
      e.configure({
        ...(b.job_duration_ms !== undefined ? { jobDurationMs: b.job_duration_ms } : {}),
        ...(b.rate_limit_per_minute !== undefined ? { rateLimitPerMinute: b.rate_limit_per_minute } : {}),
        ...(b.row_errors ? { rowErrors: b.row_errors } : {}),
        ...(b.legacy_jobs ? { legacyJobs: b.legacy_jobs } : {}),
      });
      return json(200, settingsView(e));
    }
    default:
      throw httpError(404, 'NOT_FOUND', `no admin route ${m} ${ADMIN_PREFIX}${path}`);
  }
}
