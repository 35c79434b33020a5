import { hash } from 'node:crypto';
import { canonicalJson } from './canonical.js';
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

/** Characters JSON.stringify escapes in a string (and surrogates, left to it). */
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;
/** Keys JavaScript orders first, as numbers (array indices): left to the generic path. */
const INDEX_KEY = /^(?:0|[1-9][0-9]*)$/;

function text(s: string): string {
  return ESCAPED.test(s) ? JSON.stringify(s) : `"${s}"`;
}

function scalar(v: unknown): string {
  return typeof v === 'string' ? text(v) : JSON.stringify(v);
}

// Records of one export have the same attribute keys: their sorted order is worked out once.
let lastKeys: string[] = [];
let lastSorted: string[] = [];

/** The attributes as canonical JSON, or null when they need the generic path (nested values, index-like keys). */
function attributesJson(a: Record<string, unknown>): string | null {
  const keys = Object.keys(a);
  let sorted = lastSorted;
  let same = keys.length === lastKeys.length;
  for (let i = 0; same && i < keys.length; i++) same = keys[i] === lastKeys[i];
  if (!same) {
    for (const k of keys) if (INDEX_KEY.test(k)) return null;
    sorted = [...keys].sort();
    lastKeys = keys;
    lastSorted = sorted;
  }
  let out = '{';
  for (const k of sorted) {
    const v = a[k];
    let t: string;
    if (typeof v === 'string') t = text(v);
    else if (typeof v === 'number') t = Number.isFinite(v) ? String(v) : 'null';
    else if (typeof v === 'boolean') t = v ? 'true' : 'false';
    else if (v === null) t = 'null';
    else if (v === undefined) continue;
    else return null;
    out += out.length === 1 ? `${text(k)}:${t}` : `,${text(k)}:${t}`;
  }
  return `${out}}`;
}

/** sha256 hex of text, the one-shot API (several times faster than createHash for small inputs). */
export function textHash(text: string): string {
  return hash('sha256', text, 'hex');
}
