/**
 * What the value guards ask of each field of a record, read straight from
 * its canonical JSON text (record-json.ts) without building the record: the
 * guards look at every compared record, unchanged ones too, and parsing a
 * million records whole cost a sync more than the diff itself (issue 18).
 *
 * Each value is read as its flags (`classify` of the value JSON.parse would
 * give; numbers, literals, lists, and text starting with a letter are told
 * without making the value). Text in any other shape (whitespace, keys out
 * of canonical order or repeated, attributes that are not an object, a
 * malformed number or literal) is not read: `read` says false and the
 * caller parses it, so the answer is never other than the parse's. What is
 * inside a nested list or object, and a raw control character in a string,
 * are not checked: the snapshot's text is written by recordJson, never by
 * hand.
 */

import type { DatasetRecord } from './record.js';

/** The value is not zero or empty (isZeroOrEmpty is false). */
export const ZEROABLE = 1;
/** The value is a non-zero number (or text that is one). */
export const NONZERO = 2;

/** The flags of a value as JSON.parse gives it (value-guards.ts supplies it). */
export type Classify = (value: unknown) => number;

/** The top-level fields the value guards look at (attributes aside), in the order their flags are written. */
export const TOP_FIELDS = ['display_name', 'api_value', 'aliases', 'active'] as const;

const FAIL = -1;

/** Stand-ins for nested values, which the guards only test for emptiness. */
const LIST_EMPTY: readonly unknown[] = Object.freeze([]);
const LIST: readonly unknown[] = Object.freeze([null]);
const OBJECT: Readonly<Record<string, unknown>> = Object.freeze({});

/** One reader, reused record after record (its arrays are overwritten in place). */
export class RecordValues {
  /** Top-level fields other than attributes, in text order (record_id among them), and their flags. */
  readonly topKeys: string[] = [];
  readonly topFlags: number[] = [];
  topCount = 0;
  /** The attributes, in text order, and their flags. */
  readonly attrKeys: string[] = [];
  readonly attrFlags: number[] = [];
  attrCount = 0;
  /** Where the last token read ended. */
  #end = 0;
  /** The keys of the last record read, by place (top level, attributes). */
  readonly #topSeen: string[] = [];
  readonly #attrSeen: string[] = [];
  /** The text being read has no backslash: each string ends at the next quote. */
  #plain = false;

  constructor(private readonly classify: Classify) {}

  /** Read `json`; false when it is not canonical record JSON as this reads it (the caller parses it instead). */
  read(json: string): boolean {
    this.topCount = 0;
    this.attrCount = 0;
    this.#plain = !json.includes('\\');
    return this.#object(json, 0, true) && this.#end === json.length;
  }

  /** The object at `i`; its pairs go to top (or attributes, for the nested one). */
  #object(json: string, i: number, top: boolean): boolean {
    if (json.charCodeAt(i) !== 0x7b) return false;
    i++;
    if (json.charCodeAt(i) === 0x7d) {
      this.#end = i + 1;
      return true;
    }
    const seen = top ? this.#topSeen : this.#attrSeen;
    let last: string | null = null;
    for (let k = 0; ; k++) {
      // Records of one dataset name the same keys: the one at this place last time is taken again when it matches.
      const prev = seen[k];
      let key: string;
      if (prev !== undefined && this.#plain && json.charCodeAt(i) === 0x22 && json.charCodeAt(i + 1 + prev.length) === 0x22 && json.startsWith(prev, i + 1)) {
        key = prev;
        this.#end = i + 2 + prev.length;
      } else {
        const s = this.#string(json, i);
        if (s === null) return false;
        key = s;
        // Taken again only as it is written: a key with a quote or backslash is written otherwise (NUL never matches).
        seen[k] = key.includes('"') || key.includes('\\') ? '\u0000' : key;
      }
      // Canonical JSON sorts keys (canonical.ts): a key not after the last is a repeat, or not canonical.
      if (last !== null && !(last < key)) return false;
      last = key;
      i = this.#end;
      if (json.charCodeAt(i) !== 0x3a) return false;
      i++;
      if (top && key === 'attributes') {
        if (!this.#object(json, i, false)) return false;
      } else {
        const flags = this.#value(json, i);
        if (flags === FAIL) return false;
        if (top) {
          this.topKeys[this.topCount] = key;
          this.topFlags[this.topCount++] = flags;
        } else {
          this.attrKeys[this.attrCount] = key;
          this.attrFlags[this.attrCount++] = flags;
        }
      }
      i = this.#end;
      const c = json.charCodeAt(i);
      if (c === 0x2c) i++;
      else if (c === 0x7d) {
        this.#end = i + 1;
        return true;
      } else return false;
    }
  }

  /** The flags of the value at `i`, or FAIL. */
  #value(json: string, i: number): number {
    const c = json.charCodeAt(i);
    if (c === 0x22) {
      const d = json.charCodeAt(i + 1);
      // Text starting with a letter is no number (not even after NFKC, which keeps an ASCII letter one) and not empty.
      if ((d >= 0x61 && d <= 0x7a) || (d >= 0x41 && d <= 0x5a)) {
        const end = this.#stringEnd(json, i);
        if (end < 0) return FAIL;
        this.#end = end;
        return ZEROABLE;
      }
      const s = this.#string(json, i);
      return s === null ? FAIL : this.classify(s);
    }
    if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = i + 1;
      for (; j < json.length; j++) {
        const d = json.charCodeAt(j);
        if (!((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x65 || d === 0x45 || d === 0x2b || d === 0x2d)) break;
      }
      const token = json.slice(i, j);
      if (!NUMBER.test(token)) return FAIL;
      this.#end = j;
      return this.classify(Number(token));
    }
    if (json.startsWith('true', i)) return this.#literal(i + 4, true);
    if (json.startsWith('false', i)) return this.#literal(i + 5, false);
    if (json.startsWith('null', i)) return this.#literal(i + 4, null);
    if (c === 0x5b || c === 0x7b) {
      const end = skipNested(json, i, this.#plain);
      if (end < 0) return FAIL;
      this.#end = end;
      const empty = json.charCodeAt(i + 1) === (c === 0x5b ? 0x5d : 0x7d);
      return this.classify(c === 0x7b ? OBJECT : empty ? LIST_EMPTY : LIST);
    }
    return FAIL;
  }

  #literal(end: number, v: boolean | null): number {
    this.#end = end;
    return this.classify(v);
  }

  /** The string at `i` (its end in #end), or null. */
  #string(json: string, i: number): string | null {
    if (json.charCodeAt(i) !== 0x22) return null;
    const end = this.#stringEnd(json, i);
    if (end < 0) return null;
    this.#end = end;
    const raw = json.slice(i + 1, end - 1);
    if (this.#plain || !raw.includes('\\')) return raw;
    try {
      return JSON.parse(json.slice(i, end)) as string;
    } catch {
      return null;
    }
  }

  #stringEnd(json: string, i: number): number {
    return this.#plain ? json.indexOf('"', i + 1) + 1 || -1 : stringEnd(json, i);
  }
}

/** The end (after the closing quote) of the JSON string at `i`, or -1 (unclosed, or a raw control character). */
function stringEnd(json: string, i: number): number {
  for (let j = i + 1; j < json.length; j++) {
    const c = json.charCodeAt(j);
    if (c === 0x22) return j + 1;
    if (c === 0x5c) j++;
    else if (c < 0x20) return -1;
  }
  return -1;
}

/** A JSON number as JSON writes it. */
const NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/** The end of the list or object starting at `i` (strings inside skipped whole), or -1; `plain`: no backslash in `json`. */
function skipNested(json: string, i: number, plain: boolean): number {
  let depth = 0;
  for (let j = i; j < json.length; j++) {
    const c = json.charCodeAt(j);
    if (c === 0x22) {
      j = (plain ? json.indexOf('"', j + 1) + 1 || -1 : stringEnd(json, j)) - 1;
      if (j < 0) return -1;
    } else if (c === 0x5b || c === 0x7b) depth++;
    else if (c === 0x5d || c === 0x7d) {
      if (--depth === 0) return j + 1;
    }
  }
  return -1;
}

/** Shapes (attribute key lists) told apart per sort; past this many, records of a new shape carry no flags. */
const MAX_SHAPES = 256;

/**
 * The base flags of a record's values, worked out from the record as it is
 * mapped (before it is ever text) and carried beside its JSON in the sorted
 * runs (sorted-source.ts): an unchanged record's values are then counted
 * from these, and its text is not read again (issue 18; reading it was the
 * diff's largest cost). `of` gives `<shape>.<digits>`: the index of the
 * record's attribute keys (in `shapes`), then one digit (the flags) a top
 * field in TOP_FIELDS order and one an attribute in the shape's order. The
 * flags are those of the value JSON.parse would give back from recordJson
 * (a number that is not finite is written null, an absent value is 0); a
 * record with anything whose JSON is not plain (a toJSON, a class instance,
 * a function, a bigint) gets none, and is read from its text as before.
 */
export class ValueFlagsWriter {
  /** Attribute keys of each shape, in the records' key order. */
  readonly shapes: string[][] = [];
  readonly #index = new Map<string, number>();
  #lastKeys: string[] = [];
  #lastShape = -1;
  /** Per shape, the flags text of each flags code met (of). */
  readonly #texts: Map<number, string>[] = [];
  readonly #digits: number[] = [];

  constructor(private readonly classify: Classify) {}

  /** The flags of `rec` as text, or undefined (then its JSON is read instead). */
  of(record: DatasetRecord): string | undefined {
    const rec = record as unknown as Readonly<Record<string, unknown>>;
    const attrs = rec['attributes'];
    if (!isPlainObject(attrs)) return undefined;
    const keys = Object.keys(attrs);
    const shape = this.#shape(keys);
    if (shape < 0) return undefined;
    // The flags as a number (two bits a field) first: records of a shape have few distinct flags, and the
    // text of each is made once (MAX_TEXTS a shape), not a string built digit by digit for every record.
    const digits = this.#digits;
    let code = 0;
    let n = 0;
    for (const f of TOP_FIELDS) {
      const flags = this.#flags(rec[f]);
      if (flags === FAIL) return undefined;
      digits[n++] = flags;
      code = code * 4 + flags;
    }
    for (const k of keys) {
      const flags = this.#flags(attrs[k]);
      if (flags === FAIL) return undefined;
      digits[n++] = flags;
      code = code * 4 + flags;
    }
    // Exact while 2 bits a field fit a double's 53 (one shape's records all have n fields: codes never collide).
    const texts = n <= MAX_CODED_FIELDS ? this.#texts[shape]! : null;
    const known = texts?.get(code);
    if (known !== undefined) return known;
    let out = `${shape}.`;
    for (let i = 0; i < n; i++) out += DIGITS[digits[i]!];
    if (texts && texts.size < MAX_TEXTS) texts.set(code, out);
    return out;
  }

  #shape(keys: string[]): number {
    const last = this.#lastKeys;
    let same = keys.length === last.length;
    for (let i = 0; same && i < keys.length; i++) same = keys[i] === last[i];
    if (same && this.#lastShape >= 0) return this.#lastShape;
    const name = JSON.stringify(keys);
    let shape = this.#index.get(name);
    if (shape === undefined) {
      if (this.shapes.length >= MAX_SHAPES) return -1;
      shape = this.shapes.length;
      this.shapes.push(keys);
      this.#texts.push(new Map());
      this.#index.set(name, shape);
    }
    this.#lastKeys = keys;
    this.#lastShape = shape;
    return shape;
  }

  /** The flags of a value as JSON.parse gives it back from its JSON, or FAIL. */
  #flags(v: unknown): number {
    switch (typeof v) {
      case 'string': {
        // As RecordValues: text starting with an ASCII letter is no number and not empty.
        const d = v.charCodeAt(0);
        return (d >= 0x61 && d <= 0x7a) || (d >= 0x41 && d <= 0x5a) ? ZEROABLE : this.classify(v);
      }
      case 'number':
        return this.classify(Number.isFinite(v) ? v : null);
      case 'boolean':
        return this.classify(v);
      case 'undefined':
        return 0; // absent from the JSON: counted as absent
      case 'object':
        if (v === null) return this.classify(null);
        if (Array.isArray(v)) return Object.getPrototypeOf(v) === Array.prototype && !('toJSON' in v) ? this.classify(v.length === 0 ? LIST_EMPTY : LIST) : FAIL;
        return isPlainObject(v) ? this.classify(OBJECT) : FAIL;
      default:
        return FAIL;
    }
  }
}

const DIGITS = ['0', '1', '2', '3'] as const;
/** Fields (top and attributes) whose flags fit one exact number code (2 bits each, 52 bits). */
const MAX_CODED_FIELDS = 26;
/** Flags texts kept per shape: the distinct flags of a shape's records are few; past this many they are built each time. */
const MAX_TEXTS = 4096;

/** An object JSON writes as its own keys: a plain (or null-prototype) object without a toJSON. */
function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return (proto === Object.prototype || proto === null) && !('toJSON' in v);
}
