import { json, type ApiResponse } from '../http-types.js';
import type { Route, RouteContext } from '../context.js';

/** A25: GET {base}. */
function getDataset(ctx: RouteContext): ApiResponse {
  const { ds, now } = ctx;
  return json(
    200,
    {
      dataset_id: ds.id,
      name: ds.name,
      record_count: ds.activeRecords.size,
      active_version: ds.activeVersion,
      draft_version: ds.draftVersion(now),
    },
    { etag: ds.etag },
  );
}

/** Route of the dataset itself. */
export const datasetRoutes: Route[] = [
  { method: 'GET', pattern: '', role: 'read', write: false, body: 'none', query: [], handle: getDataset },
];
