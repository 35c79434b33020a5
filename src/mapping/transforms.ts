import type { NumberGrammar, NumberOptions, TransformSpec } from './transform-config.js';
import { dateParser } from './date.js';
import { numberParser } from './number.js';
import { fixScientific } from './scientific.js';
import { ValueError, asText, isEmpty, type Transform, type Value } from './value.js';
import { excerpt } from '../model/excerpt.js';

export { plainDecimal } from './number.js';

/** What the mapping around a transform decides for it. */
export interface TransformContext {
  /** The mapping's number grammar, for number and integer transforms that leave parts of it out. */
  numbers: NumberGrammar;
  /** Words (boolean, null_words, conditions) match with their case. */
  matchCase: boolean;
}

/** The context of a mapping with every option at its default. */
export const DEFAULT_CONTEXT: TransformContext = { numbers: { decimal_separator: '.', thousands_separator: '', exponent: false }, matchCase: false };

/** What a boolean transform does with an empty cell that its words do not list. */
interface BooleanPlace {
  /** A later `default` in the same transforms fills it: empty passes on as empty. */
  emptyFilledLater: boolean;
}

/** Apply a string function to text values, element-wise to lists; null stays null. */
function onText(fn: (s: string) => string): Transform {
  return (v) => {
    if (v === null) return null;
    if (Array.isArray(v)) return v.map(fn);
    return fn(typeof v === 'string' ? v : String(v));
  };
}

/** How words are compared: trimmed, and lowercased unless the mapping matches case. */
export function wordKey(matchCase: boolean): (w: string) => string {
  return matchCase ? (w) => w.trim() : (w) => w.trim().toLowerCase();
}

const DEFAULT_TRUE_WORDS = ['true', 'y', 'yes', '1'];
const DEFAULT_FALSE_WORDS = ['false', 'n', 'no', '0'];

/**
 * Boolean by configured words (case-insensitive unless `matchCase`). An
 * empty cell is a word like any other: it has a meaning only when the
 * mapping gives it one ("" among the words, or a `default`); otherwise it is
 * an INVALID_BOOLEAN row error, never true and never "no value" (issue 11:
 * Odoo writes False as an empty cell). null, which only an earlier transform
 * that says "no value" (null_words, empty_is_null) makes, stays null.
 */
export function booleanParser(trueWords: string[], falseWords: string[], matchCase = false, place: BooleanPlace = { emptyFilledLater: false }): Transform {
  const key = wordKey(matchCase);
  const map = new Map<string, boolean>();
  for (const w of trueWords) map.set(key(w), true);
  for (const w of falseWords) map.set(key(w), false);
  // The words as written and lowercased, each with the answer its lowercase form gives: a cell spelled
  // like a configured word is looked up without lowercasing it (a new string for non-ASCII text).
  const exact = new Map<string, boolean>();
  for (const w of [...trueWords, ...falseWords]) {
    for (const k of [w.trim(), key(w)]) {
      const b = map.get(key(k));
      if (b !== undefined) exact.set(k, b);
    }
  }
  const empty = map.get('');
  const shown = (w: string) => (w.trim() === '' ? '(empty)' : w);
  const expected = [...trueWords.map(shown), ...falseWords.map(shown)].join('/');
  return (v) => {
    if (typeof v === 'boolean' || v === null) return v;
    const s = asText(v).trim();
    if (s === '') {
      if (empty !== undefined) return empty;
      if (place.emptyFilledLater) return null;
      throw new ValueError(
        'INVALID_BOOLEAN',
        `an empty cell is neither true nor false (expected ${expected}); if empty means false (or true), list "" among the false_words (or true_words), or add { default: … } to the transforms`,
        '',
      );
    }
    const b = exact.get(s) ?? (matchCase ? undefined : map.get(s.toLowerCase()));
    if (b === undefined) throw new ValueError('INVALID_BOOLEAN', `${excerpt(s)} is not a boolean (expected ${expected}${matchCase ? ', with this case' : ''})`, s);
    return b;
  };
}

/** The default boolean words, for `active` without a boolean transform. */
export function defaultBooleanParser(matchCase: boolean): Transform {
  return booleanParser(DEFAULT_TRUE_WORDS, DEFAULT_FALSE_WORDS, matchCase);
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

function grammar(ctx: TransformContext, opts: NumberOptions = {}): NumberGrammar {
  return {
    decimal_separator: opts.decimal_separator ?? ctx.numbers.decimal_separator,
    thousands_separator: opts.thousands_separator ?? ctx.numbers.thousands_separator,
    exponent: opts.exponent ?? ctx.numbers.exponent,
  };
}

/** Compile one transform spec. */
export function compileTransform(spec: TransformSpec, ctx: TransformContext = DEFAULT_CONTEXT, place: BooleanPlace = { emptyFilledLater: false }): Transform {
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
        return numberParser(grammar(ctx), false);
      case 'integer':
        return numberParser(grammar(ctx), true);
      case 'boolean':
        return booleanParser(DEFAULT_TRUE_WORDS, DEFAULT_FALSE_WORDS, ctx.matchCase, place);
      case 'date':
        return dateParser('ymd');
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
  if ('number' in spec) return numberParser(grammar(ctx, spec.number), false);
  if ('integer' in spec) return numberParser(grammar(ctx, spec.integer), true);
  if ('boolean' in spec) return booleanParser(spec.boolean.true_words, spec.boolean.false_words, ctx.matchCase, place);
  if ('date' in spec) return dateParser(spec.date.order);
  if ('split' in spec) return splitter(spec.split.separator);
  if ('default' in spec) {
    const d = spec.default;
    return (v) => (isEmpty(v) ? d : v);
  }
  if ('null_words' in spec) {
    const key = wordKey(ctx.matchCase);
    const words = new Set(spec.null_words.map(key));
    return (v) => (typeof v === 'string' && words.has(key(v)) ? null : v);
  }
  const { pattern, replacement, flags } = spec.regex_replace;
  const re = new RegExp(pattern, flags.includes('u') ? flags : `${flags}u`);
  return onText((s) => s.replace(re, replacement));
}

function isDefault(spec: TransformSpec): boolean {
  return typeof spec === 'object' && 'default' in spec;
}

/** Compile an ordered list of transforms into one function. */
export function compileTransforms(specs: TransformSpec[], ctx: TransformContext = DEFAULT_CONTEXT): Transform | null {
  // A boolean leaves an empty cell to a `default` after it, and only then.
  const fns = specs.map((spec, i) => compileTransform(spec, ctx, { emptyFilledLater: specs.slice(i + 1).some(isDefault) }));
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
