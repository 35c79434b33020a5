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
    `{"active":${r.active === true ? 'true' : r.active === false ? 'false' : JSON.stringify(r.active)},"aliases":${list},"api_value":${scalar(r.api_value)},` +
    `"attributes":${attrs},"display_name":${scalar(r.display_name)},"record_id":${scalar(r.record_id)}}`
  );
}

/** sha256 hex of text, the one-shot API (several times faster than createHash for small inputs). */
export function textHash(text: string): string {
  return hash('sha256', text, 'hex');
}

/** The keys of a record as recordJson writes them, in order. */
const RECORD_KEYS = ['active', 'aliases', 'api_value', 'attributes', 'display_name', 'record_id'];
/** Keys JavaScript orders first, as numbers (array indices). */
const INDEX_LIKE = /^(?:0|[1-9][0-9]*)$/;

/**
 * Whether JSON.parse(recordJson(r)) gives `r` back key for key, in the same key order (the A6 shape, its keys
 * and attribute keys in canonical order, every value a JSON scalar): such a record may be handed on beside its
 * text, saving the next stage a parse of it. False whenever in doubt.
 */
export function parsesBackAs(r: DatasetRecord): boolean {
  const keys = Object.keys(r);
  if (keys.length !== RECORD_KEYS.length) return false;
  for (let i = 0; i < keys.length; i++) if (keys[i] !== RECORD_KEYS[i]) return false;
  if (typeof r.active !== 'boolean' || !jsonScalar(r.api_value) || !jsonScalar(r.display_name) || typeof r.record_id !== 'string') return false;
  const aliases = r.aliases as unknown;
  if (!Array.isArray(aliases)) return false;
  for (const x of aliases) if (typeof x !== 'string') return false;
  const a = r.attributes as unknown;
  if (a === null || typeof a !== 'object' || Array.isArray(a) || Object.getPrototypeOf(a) !== Object.prototype) return false;
  let prev: string | null = null;
  for (const k of Object.keys(a)) {
    if ((prev !== null && !(prev < k)) || k === '__proto__' || INDEX_LIKE.test(k) || !jsonScalar((a as Record<string, unknown>)[k])) return false;
    prev = k;
  }
  return true;
}

/** `r` as a new record with its keys in recordJson's order (the values shared), for parsesBackAs; null when it has other keys than a record's. */
export function inRecordOrder(r: DatasetRecord): DatasetRecord | null {
  if (Object.keys(r).length !== RECORD_KEYS.length) return null;
  return { active: r.active, aliases: r.aliases, api_value: r.api_value, attributes: r.attributes, display_name: r.display_name, record_id: r.record_id };
}

function jsonScalar(v: unknown): boolean {
  return v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v) && !Object.is(v, -0));
}
