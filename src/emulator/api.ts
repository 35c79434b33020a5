import { httpError, EmulatorHttpError } from './http-error.js';
import { headerValue, json, type ApiRequest, type ApiResponse } from './http-types.js';
import { KeyRegistry, keyFingerprint, requireRole } from './keys.js';
import { isMultipart, parseJsonBody, parseMultipart, requestFingerprint, type FormField } from './body.js';
import { checkQuery, type Route, type RouteContext } from './context.js';
import type { RequestLogEntry } from './request-log.js';
import type { Emulator } from './emulator.js';
import { datasetRoutes } from './routes/dataset.js';
import { recordRoutes } from './routes/records.js';
import { versionRoutes } from './routes/versions.js';
import { jobRoutes } from './routes/jobs.js';

/** Path prefix of every dataset (spec: `{base_url}/api/v1/business-datasets/{dataset_id}`). */
export const API_PREFIX = '/api/v1/business-datasets/';

const ROUTES: Route[] = [...datasetRoutes, ...recordRoutes, ...jobRoutes, ...versionRoutes];

interface CompiledRoute {
  route: Route;
  re: RegExp;
  names: string[];
}

const COMPILED: CompiledRoute[] = ROUTES.map((route) => {
  const names: string[] = [];
  const source = route.pattern.replace(/:([A-Za-z]+)/g, (_m, name: string) => {
    names.push(name);
    return '([^/]+)';
  });
  return { route, re: new RegExp(`^${source}$`), names };
});

/** Find the route for a method and a path relative to the dataset base; 404/405 otherwise. */
function matchRoute(method: string, rest: string): { route: Route; params: Record<string, string> } {
  let pathMatched = false;
  for (const c of COMPILED) {
    const m = c.re.exec(rest);
    if (!m) continue;
    pathMatched = true;
    if (c.route.method !== method) continue;
    const params: Record<string, string> = {};
    c.names.forEach((n, i) => {
      params[n] = decodeURIComponent(m[i + 1] as string);
    });
    return { route: c.route, params };
  }
  if (pathMatched) throw httpError(405, 'METHOD_NOT_ALLOWED', `${method} is not allowed on this path`);
  throw httpError(404, 'NOT_FOUND', 'no such endpoint');
}

/** A2: does an If-Match header name the active version's ETag? */
function ifMatchHolds(header: string, etag: string): boolean {
  return header
    .split(',')
    .map((t) => t.trim().replace(/^W\//, ''))
    .some((t) => t === '*' || t === etag);
}

/**
 * The dataset API: rate limit (A24), authentication (A23), dataset and switch,
 * route and role, query check (A34), idempotency (A16/A35), If-Match (A2), handler.
 */
export async function handleApi(emulator: Emulator, req: ApiRequest, log: RequestLogEntry): Promise<ApiResponse> {
  try {
    return await dispatch(emulator, req, log);
  } catch (err) {
    if (err instanceof EmulatorHttpError) {
      log.errorCode = err.code;
      return json(err.status, err.body(), err.headers);
    }
    throw err;
  }
}

async function dispatch(emulator: Emulator, req: ApiRequest, log: RequestLogEntry): Promise<ApiResponse> {
  const now = emulator.clock.now();
  const token = KeyRegistry.bearer(headerValue(req.headers, 'authorization'));
  if (token) {
    log.keyFingerprint = keyFingerprint(token);
    const verdict = emulator.limiter.hit(log.keyFingerprint, now);
    if (!verdict.allowed) {
      throw httpError(429, 'RATE_LIMITED', 'more than the allowed requests per minute for this key', { retry_after_s: verdict.retryAfterS }, {
        'retry-after': String(verdict.retryAfterS),
      });
    }
  }
  emulator.tick();
  if (!req.path.startsWith(API_PREFIX)) throw httpError(404, 'NOT_FOUND', 'no such endpoint');
  const afterPrefix = req.path.slice(API_PREFIX.length);
  const slash = afterPrefix.indexOf('/');
  const datasetId = decodeURIComponent(slash < 0 ? afterPrefix : afterPrefix.slice(0, slash));
  const rest = slash < 0 ? '' : afterPrefix.slice(slash).replace(/\/$/, '');
  const key = emulator.keys.authenticate(token, now);
  const ds = emulator.datasets.get(datasetId);
  // Spec: a request for another dataset gets 404, as if it did not exist.
  if (!ds || key.dataset !== datasetId) throw httpError(404, 'DATASET_NOT_FOUND', `dataset ${datasetId} does not exist`);
  if (!ds.apiEnabled) throw httpError(403, 'API_DISABLED', "the dataset's external API switch is off");
  const { route, params } = matchRoute(req.method, rest);
  requireRole(key, route.role);
  checkQuery(req.query, route.query);

  const ctx: RouteContext = { emulator, ds, key, req, params, now };
  if (route.body === 'json') ctx.json = parseJsonBody(req);
  if (route.body === 'multipart') ctx.fields = await parseMultipart(req);
  else if (isMultipart(req)) throw httpError(400, 'BAD_REQUEST', 'this endpoint takes a JSON body');

  // Writes of one dataset run one at a time, so a repeat that arrives while the first is still
  // being parsed (a large upload) sees its stored answer instead of racing it.
  return route.write ? withLock(ds, () => execute(emulator, route, ctx, log)) : execute(emulator, route, ctx, log);
}

const locks = new WeakMap<object, Promise<unknown>>();

function withLock<T>(id: object, fn: () => Promise<T>): Promise<T> {
  const previous = locks.get(id) ?? Promise.resolve();
  const run = previous.then(fn, fn);
  const settled = run.catch(() => undefined);
  locks.set(id, settled);
  void settled.then(() => {
    if (locks.get(id) === settled) locks.delete(id);
  });
  return run;
}

async function execute(emulator: Emulator, route: Route, ctx: RouteContext, log: RequestLogEntry): Promise<ApiResponse> {
  const { req, ds } = ctx;
  emulator.tick();
  const now = emulator.clock.now();
  ctx.now = now;
  const idemKey = route.write ? (headerValue(req.headers, 'idempotency-key') ?? null) : null;
  log.idempotencyKey = idemKey;
  let fingerprint = '';
  if (idemKey) {
    fingerprint = requestFingerprint(req, ctx.fields ? { fields: ctx.fields as FormField[] } : { json: ctx.json });
    const stored = emulator.idempotency.lookup(ds.id, idemKey, fingerprint, now);
    if (stored) {
      log.replayed = true;
      emulator.counters.replays++;
      const job = stored.jobId ? emulator.jobs.get(stored.jobId) : undefined;
      const body = job ? { job: emulator.jobs.render(job, now) } : stored.body;
      return { status: stored.status, headers: { ...stored.headers, etag: ds.etag, 'idempotent-replayed': 'true' }, body };
    }
  }
  const ifMatch = route.write ? headerValue(req.headers, 'if-match') : undefined;
  if (ifMatch !== undefined && !ifMatchHolds(ifMatch, ds.etag)) {
    throw httpError(412, 'PRECONDITION_FAILED', 'If-Match differs from the active version ETag', { current_etag: ds.etag });
  }
  const res = await route.handle(ctx);
  if (idemKey && res.status >= 200 && res.status < 300) {
    // Only successes are kept: a refused request (409, 429…) may succeed when repeated later.
    const answer = { status: res.status, headers: res.headers, body: res.body, ...(res.jobId ? { jobId: res.jobId } : {}) };
    emulator.idempotency.store(ds.id, idemKey, fingerprint, now, answer);
  }
  return res;
}
