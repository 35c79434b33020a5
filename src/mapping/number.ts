import type { NumberGrammar } from './transform-config.js';
import { ValueError, asText, type Transform } from './value.js';
import { excerpt } from '../model/excerpt.js';

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The text a number in this grammar matches: digits with the decimal mark, grouping and exponent only as configured. */
export function numberPattern(g: NumberGrammar): RegExp {
  const dec = escape(g.decimal_separator);
  const grouped = g.thousands_separator === '' ? null : `\\d{1,3}(?:${escape(g.thousands_separator)}\\d{3})+`;
  const body = grouped ? `(?:${grouped}|\\d+)` : '\\d+';
  return new RegExp(`^[+-]?(?:${body}(?:${dec}\\d*)?|${dec}\\d+)${g.exponent ? '(?:[eE][+-]?\\d+)?' : ''}$`);
}

/** How a grammar writes a number, for messages: "1250 or 1,250.5". */
export function grammarExample(g: NumberGrammar, integer: boolean): string {
  const frac = integer ? '' : `${g.decimal_separator}5`;
  const forms = [`1250${frac}`];
  if (g.thousands_separator !== '') forms.push(`1${g.thousands_separator}250${frac}`);
  if (g.exponent) forms.push(`1${integer ? '' : g.decimal_separator + '25'}E+3`);
  return forms.join(' or ');
}

/**
 * Parse a number written in `g`; anything else is a row error. A mark the
 * grammar does not name (a comma of 1,250 where none is configured, the
 * E+3 a spreadsheet writes for a mangled value) is refused rather than read
 * some way, so that a wrong price never passes as a right one (issue 16).
 */
export function numberParser(g: NumberGrammar, integer: boolean): Transform {
  const pattern = numberPattern(g);
  const what = integer ? 'a whole number' : 'a number';
  const hint = `written as ${grammarExample(g, integer)}${g.thousands_separator === '' || !g.exponent ? '; other marks are set with the transform\'s options or mapping.numbers' : ''}`;
  // Plain text has nothing to remove only when "." is the decimal mark and not also the grouping mark.
  const plainDot = g.decimal_separator === '.' && g.thousands_separator !== '.';
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
      if (!pattern.test(s)) throw new ValueError('TRANSFORM_FAILED', `${excerpt(s)} is not ${what} ${hint}`, s);
      let plain = g.thousands_separator === '' ? s : s.split(g.thousands_separator).join('');
      if (g.decimal_separator === ',') plain = plain.replace(',', '.');
      n = Number(plain);
    }
    if (!Number.isFinite(n)) throw new ValueError('TRANSFORM_FAILED', `${excerpt(s)} is out of range`, s);
    if (integer && !Number.isInteger(n)) throw new ValueError('TRANSFORM_FAILED', `${excerpt(s)} is not a whole number`, s);
    // A value a double cannot hold exactly would be published as a different number (12345678901234567 as
    // ...568, 99999999999999999999 as 1e20) with no error: refuse it; a code that long is text, not a number.
    if (integer ? !Number.isSafeInteger(n) : s.length > 15 && significantDigits(s) > 15) {
      throw new ValueError(
        'TRANSFORM_FAILED',
        `${excerpt(s)} has more digits than a number keeps exactly (${integer ? 'whole numbers up to 9007199254740991' : '15 significant digits'}); map this column without a number transform to keep it as text`,
        s,
      );
    }
    return n;
  };
}

/** Digits of the mantissa from the first to the last non-zero one ("0012.3400e5" → 4). */
function significantDigits(s: string): number {
  let first = -1;
  let last = -1;
  let count = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 101 || c === 69) break; // e E
    if (c < 48 || c > 57) continue;
    if (c !== 48) {
      if (first === -1) first = count;
      last = count;
    }
    count++;
  }
  return first === -1 ? 0 : last - first + 1;
}

const POW10 = Array.from({ length: 16 }, (_, k) => 10 ** k);

/** The character code at `i`, -1 past the end: reading past it (NaN) would throw away the optimised caller each time. */
function codeAt(s: string, i: number): number {
  return i < s.length ? s.charCodeAt(i) : -1;
}

/**
 * The value of plain decimal text, `[+-]?(\d+(\.\d*)?|\.\d+)` (which every number
 * pattern accepts and nothing needs removing from), exactly as Number() reads
 * it; NaN for any other text.
 */
export function plainDecimal(s: string): number {
  const len = s.length;
  let i = 0;
  let c = codeAt(s, 0);
  const negative = c === 45;
  if (c === 43 || c === 45) c = codeAt(s, ++i); // + -
  let digits = 0;
  let scale = 0;
  let m = 0;
  while (c >= 48 && c <= 57) {
    m = m * 10 + (c - 48);
    digits++;
    c = codeAt(s, ++i);
  }
  if (c === 46) {
    c = codeAt(s, ++i);
    while (c >= 48 && c <= 57) {
      m = m * 10 + (c - 48);
      digits++;
      scale++;
      c = codeAt(s, ++i);
    }
  }
  if (i !== len || digits === 0) return NaN;
  if (digits > 15) return Number(s);
  // Up to 15 digits, m and 10^scale are exact doubles, so one division is the correctly rounded value Number() gives.
  const n = scale === 0 ? m : m / POW10[scale]!;
  return negative ? -n : n;
}

