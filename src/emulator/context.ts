import type { DatasetState } from './dataset-state.js';
import type { FormField } from './body.js';
import type { ApiRequest, ApiResponse } from './http-types.js';
import type { KeyEntry } from './keys.js';
import type { Emulator } from './emulator.js';
import { validationFailed } from './http-error.js';
import type { Role } from './types.js';

/** Everything a route handler needs for one authenticated request. */
export interface RouteContext {
  emulator: Emulator;
  ds: DatasetState;
  key: KeyEntry;
  req: ApiRequest;
  /** Path parameters of the route (decoded). */
  params: Record<string, string>;
  now: number;
  /** Parsed JSON body (write routes), undefined when empty. */
  json?: unknown;
  /** Parsed multipart fields (uploads). */
  fields?: FormField[];
}

/** One route of the dataset API, relative to the dataset base. */
export interface Route {
  method: string;
  /** Path pattern relative to the base: '' or '/records/:id'. */
  pattern: string;
  role: Role;
  /** A write: If-Match and Idempotency-Key apply (A2, A35). */
  write: boolean;
  /** Body kind read before idempotency is checked. */
  body: 'none' | 'json' | 'multipart';
  /** Query parameters the contract names (A34: others are refused). */
  query: readonly string[];
  handle(ctx: RouteContext): Promise<ApiResponse> | ApiResponse;
}

/** A34: refuse query parameters the route does not name. */
export function checkQuery(query: URLSearchParams, allowed: readonly string[]): void {
  for (const name of query.keys()) {
    if (!allowed.includes(name)) {
      throw validationFailed(`unknown query parameter ${name}`, { parameter: name });
    }
  }
}

/** A10: the `publish` query parameter; true unless `publish=false`. */
export function publishParam(query: URLSearchParams): boolean {
  const v = query.get('publish');
  if (v === null || v === 'true') return true;
  if (v === 'false') return false;
  throw validationFailed('publish must be true or false', { parameter: 'publish' });
}
