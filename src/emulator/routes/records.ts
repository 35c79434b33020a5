import { RECORD_ID_PATTERN } from '../../model/record.js';
import { hasRole } from '../keys.js';
import { httpError, validationFailed } from '../http-error.js';
import { json, type ApiResponse } from '../http-types.js';
import { compareIds, sortedRecords } from '../diff.js';
import { applyWrite, parseCreateBody, parsePatchBody, type AppliedWrite, type RecordWrite } from '../record-ops.js';
import { publishParam, type Route, type RouteContext } from '../context.js';

/** A7: page size default and maximum. */
export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

function pageLimit(raw: string | null): number {
  if (raw === null) return DEFAULT_PAGE_SIZE;
  const n = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_PAGE_SIZE) {
    throw validationFailed(`limit must be an integer from 1 to ${MAX_PAGE_SIZE}`, { parameter: 'limit' });
  }
  return n;
}

/** A7: GET /records — a page in record_id byte order after `cursor`; `source=draft` lists the draft. */
function listRecords(ctx: RouteContext): ApiResponse {
  const { req, ds, now } = ctx;
  const limit = pageLimit(req.query.get('limit'));
  const cursor = req.query.get('cursor');
  if (cursor !== null && !RECORD_ID_PATTERN.test(cursor)) throw validationFailed('cursor must be a record_id', { parameter: 'cursor' });
  const source = req.query.get('source');
  if (source !== null && source !== 'draft') throw validationFailed('source must be draft', { parameter: 'source' });
  let records = ds.activeRecords;
  if (source === 'draft') {
    const draft = ds.pendingDraft(now);
    if (!draft) throw httpError(404, 'VERSION_NOT_FOUND', 'there is no pending draft');
    records = draft.records as typeof records;
  }
  const all = sortedRecords(records);
  let start = 0;
  if (cursor !== null) {
    // First record strictly after the cursor (it need not exist any more).
    let lo = 0;
    let hi = all.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (compareIds((all[mid] as { record_id: string }).record_id, cursor) <= 0) lo = mid + 1;
      else hi = mid;
    }
    start = lo;
  }
  const page = all.slice(start, start + limit);
  const more = start + limit < all.length;
  return json(200, { records: page, next_cursor: more ? (page[page.length - 1]?.record_id ?? null) : null }, { etag: ds.etag });
}

/** A31: GET /records/{id} from the active version. */
function getRecord(ctx: RouteContext): ApiResponse {
  const id = ctx.params.id as string;
  const rec = ctx.ds.activeRecords.get(id);
  if (!rec) throw httpError(404, 'RECORD_NOT_FOUND', `record ${id} does not exist`, { record_id: id });
  return json(200, { record: rec }, { etag: ctx.ds.etag });
}

/** A9–A12, Rule 1: apply one write, publishing it as a new version or staging it into the draft. */
function recordWrite(ctx: RouteContext, write: RecordWrite, created: boolean): ApiResponse {
  const { ds, key, now, emulator } = ctx;
  const canPublish = hasRole(key, 'publish');
  const asked = publishParam(ctx.req.query);
  // A12: a legacy key publishes even when publish=false is asked.
  const publishes = key.legacy || (asked && canPublish);
  let applied: AppliedWrite | undefined;
  let version: number;
  if (publishes) {
    const draft = ds.pendingDraft(now);
    if (draft) throw httpError(409, 'DRAFT_PENDING', `draft version ${draft.version} is pending`, { draft_version: draft.version });
    version = ds.publishDirect(now, 'api', (records) => {
      applied = applyWrite(records, write);
    }).version;
  } else {
    // A10: staged writes accumulate in the pending draft, creating it if needed.
    let draft = ds.pendingDraft(now);
    const records = draft ? (draft.records as Map<string, never>) : new Map(ds.activeRecords);
    applied = applyWrite(records, write);
    draft ??= ds.createDraft(now, 'api', records);
    version = draft.version;
  }
  emulator.counters.recordWrites++;
  return json(
    publishes && created ? 201 : 200,
    {
      record: applied?.after ?? null,
      version,
      status: publishes ? 'published' : 'draft',
      staged: !publishes,
      publish_denied: !publishes && !canPublish,
    },
    { etag: ds.etag },
  );
}

/** Routes of /records. */
export const recordRoutes: Route[] = [
  { method: 'GET', pattern: '/records', role: 'read', write: false, body: 'none', query: ['limit', 'cursor', 'source'], handle: listRecords },
  { method: 'GET', pattern: '/records/:id', role: 'read', write: false, body: 'none', query: [], handle: getRecord },
  {
    method: 'POST',
    pattern: '/records',
    role: 'write',
    write: true,
    body: 'json',
    query: ['publish'],
    handle: (ctx) => recordWrite(ctx, { kind: 'create', record: parseCreateBody(ctx.json) }, true),
  },
  {
    method: 'PATCH',
    pattern: '/records/:id',
    role: 'write',
    write: true,
    body: 'json',
    query: ['publish'],
    handle: (ctx) => {
      const recordId = ctx.params.id as string;
      return recordWrite(ctx, { kind: 'patch', recordId, patch: parsePatchBody(recordId, ctx.json) }, false);
    },
  },
  {
    method: 'DELETE',
    pattern: '/records/:id',
    role: 'write',
    write: true,
    body: 'none',
    query: ['publish'],
    handle: (ctx) => recordWrite(ctx, { kind: 'delete', recordId: ctx.params.id as string }, false),
  },
];
