import { createHash } from 'node:crypto';

/**
 * JSON with object keys sorted at every depth, so that equal values give equal
 * text (A16 compares bodies "after JSON canonicalisation"; the snapshot hashes it).
 */
export function canonicalJson(value: unknown): string {
  // A scalar, or an object of scalars (attributes), is written without a sorted copy: the diff and the feed merge
  // compare every field of every changed record this way.
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (!Array.isArray(value)) {
    const flat = flatObjectJson(value as Record<string, unknown>);
    if (flat !== null) return flat;
  }
  return JSON.stringify(sortKeys(value));
}

/** Whether two values have the same canonical JSON; the same value (a field both records share) without writing it. */
export function sameJson(a: unknown, b: unknown): boolean {
  return a === b || canonicalJson(a) === canonicalJson(b);
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value !== null && typeof value === 'object') {
    // Null prototype: a key named __proto__ (A6 allows it in attributes) stays an own key, not a prototype.
    const out: Record<string, unknown> = Object.create(null);
    for (const k of Object.keys(value).sort()) {
      const v = (value as Record<string, unknown>)[k];
      if (v !== undefined) out[k] = sortKeys(v);
    }
    return out;
  }
  return value;
}

/** Hex SHA-256 of a string or bytes. */
export function sha256(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Hash of a value's canonical JSON. */
export function canonicalHash(value: unknown): string {
  return sha256(canonicalJson(value));
}

/** Characters JSON.stringify escapes in a string (and surrogates, left to it). */
const ESCAPED = /["\\\u0000-\u001f\ud800-\udfff]/;
/** Keys JavaScript orders first, as numbers (array indices): left to the generic path. */
const INDEX_KEY = /^(?:0|[1-9][0-9]*)$/;

export function text(s: string): string {
  // Short text (nearly every value of a record) is checked a character at a time: a regex test costs more.
  if (s.length > SHORT_TEXT) return ESCAPED.test(s) ? JSON.stringify(s) : `"${s}"`;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return JSON.stringify(s);
  }
  return `"${s}"`;
}

/** Characters up to which text() checks a string without its regex. */
const SHORT_TEXT = 64;

export function scalar(v: unknown): string {
  return typeof v === 'string' ? text(v) : JSON.stringify(v);
}

/**
 * The text of a finite number (as String and JSON.stringify write it). A fraction's text is kept once made: writing
 * it takes a shortest-digits search (~250 ns, a tenth of a record's JSON), and a catalogue's prices repeat (9.99,
 * 12.50). Whole numbers are written at once (V8 keeps those it wrote). Up to MAX_NUMBER_TEXTS (about 1 MB), the
 * first met; later ones are written each time.
 */
export function numberText(v: number): string {
  if (Number.isInteger(v)) return String(v);
  let t = numberTexts.get(v);
  if (t === undefined) {
    t = String(v);
    if (numberTexts.size < MAX_NUMBER_TEXTS) numberTexts.set(v, t);
  }
  return t;
}

const numberTexts = new Map<number, string>();
const MAX_NUMBER_TEXTS = 16_384;

// Records of one export have the same attribute keys: their sorted order is worked out once.
let lastKeys: string[] = [];
let lastSorted: string[] = [];
/** Each of lastSorted as written before its value: `"key":`. */
let lastKeyTexts: string[] = [];

/**
 * canonicalJson of an object of scalars (a record's attributes) written directly, or null when it needs the
 * generic path (nested values, index-like keys).
 */
export function flatObjectJson(a: Record<string, unknown>): string | null {
  const keys = Object.keys(a);
  let sorted = lastSorted;
  let keyTexts = lastKeyTexts;
  let same = keys.length === lastKeys.length;
  for (let i = 0; same && i < keys.length; i++) same = keys[i] === lastKeys[i];
  if (!same) {
    for (const k of keys) if (INDEX_KEY.test(k)) return null;
    sorted = [...keys].sort();
    keyTexts = sorted.map((k) => `${text(k)}:`);
    lastKeys = keys;
    lastSorted = sorted;
    lastKeyTexts = keyTexts;
  }
  let out = '{';
  for (let i = 0; i < sorted.length; i++) {
    const v = a[sorted[i]!];
    let t: string;
    if (typeof v === 'string') t = text(v);
    else if (typeof v === 'number') t = Number.isFinite(v) ? numberText(v) : 'null';
    else if (typeof v === 'boolean') t = v ? 'true' : 'false';
    else if (v === null) t = 'null';
    else if (v === undefined) continue;
    else return null;
    out += out.length === 1 ? keyTexts[i]! + t : `,${keyTexts[i]!}${t}`;
  }
  return `${out}}`;
}
