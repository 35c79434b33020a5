import type { TransformSpec } from './config.js';
import { fixScientific } from './scientific.js';
import { ValueError, asText, isEmpty, type Value } from './value.js';
import { excerpt } from '../sources/excerpt.js';

/** One compiled transform. */
export type Transform = (v: Value) => Value;

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Apply a string function to text values, element-wise to lists; null stays null. */
function onText(fn: (s: string) => string): Transform {
  return (v) => {
    if (v === null) return null;
    if (Array.isArray(v)) return v.map(fn);
    return fn(typeof v === 'string' ? v : String(v));
  };
}

function numberParser(opts: { decimal_separator: '.' | ','; thousands_separator: string }, integer: boolean): Transform {
  const dec = escape(opts.decimal_separator);
  const grouped = opts.thousands_separator === '' ? null : `\\d{1,3}(?:${escape(opts.thousands_separator)}\\d{3})+`;
  const body = grouped ? `(?:${grouped}|\\d+)` : '\\d+';
  const pattern = new RegExp(`^[+-]?(?:${body}(?:${dec}\\d*)?|${dec}\\d+)(?:[eE][+-]?\\d+)?$`);
  const what = integer ? 'a whole number' : 'a number';
  // Plain text has nothing to remove only when "." is the decimal mark and not also the grouping mark.
  const plainDot = opts.decimal_separator === '.' && opts.thousands_separator !== '.';
  return (v) => {
    if (typeof v === 'number') {
      if (integer && !Number.isInteger(v)) throw new ValueError('TRANSFORM_FAILED', `${v} is not a whole number`, String(v));
      return v;
    }
    if (v === null) return null;
    const s = asText(v).trim();
    if (s === '') return null;
    // Most cells are plain ("-12", "3.50"): no regex, split or join for them; the rest take the general path.
    let n = plainDot ? plainDecimal(s) : NaN;
    if (Number.isNaN(n)) {
      if (!pattern.test(s)) throw new ValueError('TRANSFORM_FAILED', `${excerpt(s)} is not ${what}`, s);
      let plain = opts.thousands_separator === '' ? s : s.split(opts.thousands_separator).join('');
      if (opts.decimal_separator === ',') plain = plain.replace(',', '.');
      n = Number(plain);
    }
    if (!Number.isFinite(n)) throw new ValueError('TRANSFORM_FAILED', `${excerpt(s)} is out of range`, s);
    if (integer && !Number.isInteger(n)) throw new ValueError('TRANSFORM_FAILED', `${excerpt(s)} is not a whole number`, s);
    return n;
  };
}

const POW10 = Array.from({ length: 16 }, (_, k) => 10 ** k);

/**
 * The value of plain decimal text, `[+-]?(\d+(\.\d*)?|\.\d+)` (which every number
 * pattern accepts and nothing needs removing from), exactly as Number() reads
 * it; NaN for any other text.
 */
export function plainDecimal(s: string): number {
  const len = s.length;
  let i = 0;
  let c = s.charCodeAt(0);
  const negative = c === 45;
  if (c === 43 || c === 45) c = s.charCodeAt(++i); // + -
  let digits = 0;
  let scale = 0;
  let m = 0;
  while (c >= 48 && c <= 57) {
    m = m * 10 + (c - 48);
    digits++;
    c = s.charCodeAt(++i);
  }
  if (c === 46) {
    c = s.charCodeAt(++i);
    while (c >= 48 && c <= 57) {
      m = m * 10 + (c - 48);
      digits++;
      scale++;
      c = s.charCodeAt(++i);
    }
  }
  if (i !== len || digits === 0) return NaN;
  if (digits > 15) return Number(s);
  // Up to 15 digits, m and 10^scale are exact doubles, so one division is the correctly rounded value Number() gives.
  const n = scale === 0 ? m : m / POW10[scale]!;
  return negative ? -n : n;
}

/** Boolean by configured words (case-insensitive); empty stays empty. */
export function booleanParser(trueWords: string[], falseWords: string[]): Transform {
  const map = new Map<string, boolean>();
  for (const w of trueWords) map.set(w.trim().toLowerCase(), true);
  for (const w of falseWords) map.set(w.trim().toLowerCase(), false);
  // The words as written and lowercased, each with the answer its lowercase form gives: a cell spelled
  // like a configured word is looked up without lowercasing it (a new string for non-ASCII text).
  const exact = new Map<string, boolean>();
  for (const w of [...trueWords, ...falseWords]) {
    for (const k of [w.trim(), w.trim().toLowerCase()]) {
      const b = map.get(k.toLowerCase());
      if (b !== undefined) exact.set(k, b);
    }
  }
  const expected = [...trueWords, ...falseWords].join('/');
  return (v) => {
    if (typeof v === 'boolean' || v === null) return v;
    const s = asText(v).trim();
    if (s === '') return null;
    const b = exact.get(s) ?? map.get(s.toLowerCase());
    if (b === undefined) throw new ValueError('TRANSFORM_FAILED', `${excerpt(s)} is not a boolean (expected ${expected})`, s);
    return b;
  };
}

/** Split text into a list, trimming items and leaving out empty ones. */
export function splitter(separator: string): Transform {
  return (v) => {
    if (Array.isArray(v)) return v;
    if (v === null) return [];
    const s = asText(v);
    const out: string[] = [];
    // indexOf and slice instead of split: no array of parts to throw away.
    let from = 0;
    for (let at = s.indexOf(separator); ; at = s.indexOf(separator, from)) {
      const t = (at === -1 ? s.slice(from) : s.slice(from, at)).trim();
      if (t !== '') out.push(t);
      if (at === -1) return out;
      from = at + separator.length;
    }
  };
}

const NEEDS_COLLAPSE = /[^\S ]| {2}/;
const DEFAULT_NUMBER = { decimal_separator: '.', thousands_separator: ',' } as const;

/** Compile one transform spec. */
export function compileTransform(spec: TransformSpec): Transform {
  if (typeof spec === 'string') {
    switch (spec) {
      case 'trim':
        return onText((s) => s.trim());
      case 'collapse_spaces':
        // Only text with a run other than one plain space changes (\s includes \u3000); most has none.
        return onText((s) => (NEEDS_COLLAPSE.test(s) ? s.replace(/[\s\u3000]+/g, ' ') : s));
      case 'strip_prefix':
        return compileTransform({ strip_prefix: { chars: "'#" } });
      case 'number':
        return numberParser(DEFAULT_NUMBER, false);
      case 'integer':
        return numberParser(DEFAULT_NUMBER, true);
      case 'boolean':
        return booleanParser(['true', 'y', 'yes', '1'], ['false', 'n', 'no', '0']);
      case 'split':
        return splitter('|');
      case 'lowercase':
        return onText((s) => s.toLowerCase());
      case 'uppercase':
        return onText((s) => s.toUpperCase());
      case 'nfkc':
        return onText((s) => s.normalize('NFKC'));
      case 'fix_scientific':
        return onText(fixScientific);
    }
  }
  if ('strip_prefix' in spec) {
    const chars = spec.strip_prefix.chars;
    return onText((s) => (s.length > 0 && chars.includes(s[0]!) ? s.slice(1) : s));
  }
  if ('number' in spec) return numberParser(spec.number, false);
  if ('integer' in spec) return numberParser(spec.integer, true);
  if ('boolean' in spec) return booleanParser(spec.boolean.true_words, spec.boolean.false_words);
  if ('split' in spec) return splitter(spec.split.separator);
  if ('default' in spec) {
    const d = spec.default;
    return (v) => (isEmpty(v) ? d : v);
  }
  if ('null_words' in spec) {
    const words = new Set(spec.null_words.map((w) => w.trim().toLowerCase()));
    return (v) => (typeof v === 'string' && words.has(v.trim().toLowerCase()) ? null : v);
  }
  const { pattern, replacement, flags } = spec.regex_replace;
  const re = new RegExp(pattern, flags.includes('u') ? flags : `${flags}u`);
  return onText((s) => s.replace(re, replacement));
}

/** Compile an ordered list of transforms into one function. */
export function compileTransforms(specs: TransformSpec[]): Transform | null {
  const fns = specs.map(compileTransform);
  if (fns.length === 0) return null;
  if (fns.length === 1) return fns[0]!;
  if (fns.length === 2) {
    const [a, b] = fns as [Transform, Transform];
    return (v) => b(a(v));
  }
  return (v) => {
    for (const fn of fns) v = fn(v);
    return v;
  };
}
