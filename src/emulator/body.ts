import { canonicalJson, sha256 } from '../model/canonical.js';
import { httpError } from './http-error.js';
import { headerValue, type ApiRequest } from './http-types.js';

/** A multipart field: a text value or a file. */
export interface FormField {
  name: string;
  bytes: Buffer;
  filename: string | null;
  contentType: string | null;
}

/** The JSON body of a request, or undefined when empty; 400 BAD_REQUEST when not JSON. */
export function parseJsonBody(req: ApiRequest): unknown {
  if (req.body.length === 0) return undefined;
  try {
    return JSON.parse(req.body.toString('utf8')) as unknown;
  } catch {
    throw httpError(400, 'BAD_REQUEST', 'the request body is not valid JSON');
  }
}

/** True when the request carries multipart/form-data. */
export function isMultipart(req: ApiRequest): boolean {
  return /^multipart\/form-data/i.test(headerValue(req.headers, 'content-type') ?? '');
}

/** Parse a multipart/form-data body (with the platform's own parser). */
export async function parseMultipart(req: ApiRequest): Promise<FormField[]> {
  const contentType = headerValue(req.headers, 'content-type') ?? '';
  if (!/^multipart\/form-data/i.test(contentType)) {
    throw httpError(400, 'BAD_REQUEST', 'the upload must be multipart/form-data');
  }
  let form: FormData;
  try {
    form = await new Request('http://emulator.local/', {
      method: 'POST',
      headers: { 'content-type': contentType },
      body: req.body,
    }).formData();
  } catch (cause) {
    throw httpError(400, 'BAD_REQUEST', `the multipart body could not be read: ${String(cause)}`);
  }
  const fields: FormField[] = [];
  for (const [name, value] of form.entries()) {
    if (typeof value === 'string') {
      fields.push({ name, bytes: Buffer.from(value, 'utf8'), filename: null, contentType: null });
    } else {
      const file = value as File;
      fields.push({ name, bytes: Buffer.from(await file.arrayBuffer()), filename: file.name || null, contentType: file.type || null });
    }
  }
  return fields;
}

/**
 * A16: what "the same request" means for an Idempotency-Key: method, path,
 * query and the canonical JSON body, or for uploads the bytes of every field.
 */
export function requestFingerprint(req: ApiRequest, parsed: { json?: unknown; fields?: FormField[] }): string {
  const query = [...req.query.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  let body: string;
  if (parsed.fields) {
    body = parsed.fields
      .map((f) => `${f.name}\u0000${sha256(f.bytes)}`)
      .sort()
      .join('\u0001');
  } else if (parsed.json !== undefined) {
    body = canonicalJson(parsed.json);
  } else {
    body = sha256(req.body);
  }
  return sha256(`${req.method}\u0000${req.path}\u0000${JSON.stringify(query)}\u0000${body}`);
}
