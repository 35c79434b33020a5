import { hash } from 'node:crypto';
import { canonicalJson, flatObjectJson as attributesJson, scalar, text } from './canonical.js';
import type { DatasetRecord } from './record.js';

/** A record as canonical JSON text (recordJson), with its id. */
export interface RecordText {
  record_id: string;
  json: string;
}

/**
 * canonicalJson of a record, written directly for the A6 shape (a sync of a
 * million records serialises each once: this is on its hot path); anything
 * else falls back to the generic canonicalJson, so the text, and the
 * snapshot's hashes, are the same (property-tested against it).
 */
export function recordJson(r: DatasetRecord): string {
  const a = r.attributes as unknown;
  const aliases = r.aliases as unknown;
  if (Object.keys(r).length !== 6 || a === null || typeof a !== 'object' || Array.isArray(a) || !Array.isArray(aliases)) {
    return canonicalJson(r);
  }
  if (r.active === undefined || r.api_value === undefined || r.display_name === undefined || r.record_id === undefined) {
    return canonicalJson(r);
  }
  const attrs = attributesJson(a as Record<string, unknown>);
  if (attrs === null) return canonicalJson(r);
  let list = '[';
  for (let i = 0; i < aliases.length; i++) {
    const x: unknown = aliases[i];
    if (typeof x !== 'string') return canonicalJson(r);
    list += i === 0 ? text(x) : `,${text(x)}`;
  }
  list += ']';
  return (
    `{"active":${JSON.stringify(r.active)},"aliases":${list},"api_value":${scalar(r.api_value)},` +
    `"attributes":${attrs},"display_name":${scalar(r.display_name)},"record_id":${scalar(r.record_id)}}`
  );
}

/** sha256 hex of text, the one-shot API (several times faster than createHash for small inputs). */
export function textHash(text: string): string {
  return hash('sha256', text, 'hex');
}
