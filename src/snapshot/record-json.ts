import { hash } from 'node:crypto';
import { canonicalJson } from '../model/canonical.js';
import type { DatasetRecord } from '../model/record.js';

/**
 * canonicalJson of a record, written directly for the A6 shape (a 1,000,000
 * record diff spends most of its time here); anything else falls back to the
 * generic canonicalJson, so the text, and the snapshot's hashes, are the same.
 */
export function recordJson(r: DatasetRecord): string {
  const a = r.attributes as unknown;
  if (Object.keys(r).length !== 6 || a === null || typeof a !== 'object' || Array.isArray(a) || !Array.isArray(r.aliases)) {
    return canonicalJson(r);
  }
  if (r.active === undefined || r.api_value === undefined || r.display_name === undefined || r.record_id === undefined) {
    return canonicalJson(r);
  }
  // Built as an object, like canonicalJson, so integer-like keys come first as JSON.stringify orders them.
  const attrs: Record<string, unknown> = {};
  for (const k of Object.keys(a).sort()) {
    const v = (a as Record<string, unknown>)[k];
    if (v === undefined) continue;
    if (v !== null && typeof v === 'object') return canonicalJson(r);
    attrs[k] = v;
  }
  for (const x of r.aliases as unknown[]) if (x !== null && typeof x === 'object') return canonicalJson(r);
  return (
    `{"active":${JSON.stringify(r.active)},"aliases":${JSON.stringify(r.aliases)},"api_value":${JSON.stringify(r.api_value)},` +
    `"attributes":${JSON.stringify(attrs)},"display_name":${JSON.stringify(r.display_name)},"record_id":${JSON.stringify(r.record_id)}}`
  );
}

/** sha256 hex of text, the one-shot API (several times faster than createHash for small inputs). */
export function textHash(text: string): string {
  return hash('sha256', text, 'hex');
}
