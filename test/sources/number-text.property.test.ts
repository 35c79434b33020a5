import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isShortestNumber, numberText } from '../../src/sources/xlsx/cell-text.js';

/**
 * Issue 18: a numeric cell's text skips the conversion when it is already
 * JavaScript's shortest form. Whatever is written in <v>, the text must be
 * what the conversion gives, and the shortcut must be taken for the plain
 * numbers sheets are full of.
 */
const reference = (v: string) => {
  const n = Number(v);
  return v.length > 0 && Number.isFinite(n) ? String(n) : '';
};

const DIGITS = fc.array(fc.constantFrom('0', '1', '2', '5', '9'), { maxLength: 18 }).map((d) => d.join(''));
const WRITTEN = fc.oneof(
  fc.tuple(fc.constantFrom('', '-', '+', ' '), DIGITS, fc.constantFrom('', '.', '.0', 'e5', 'E-7', ' ', 'x'), DIGITS).map(([s, a, m, b]) => s + a + m + b),
  fc.double().map(String),
  fc.integer().map(String),
  fc.double({ min: -1e6, max: 1e6, noNaN: true }).map((d) => d.toFixed(2)),
  fc.constantFrom('0', '-0', '0.0', '0.1', '0.01', '00', '.5', '5.', '-.5', '1e21', '123456789012345', '1234567890123456', '0.123456789012345', '9007199254740993', '4.35', '0.3', '-0.5', 'Infinity', ''),
);

describe('numeric cell text', () => {
  it('is what String(Number(v)) gives, however the number is written', () => {
    fc.assert(
      fc.property(WRITTEN, (v) => {
        expect(numberText(v)).toBe(reference(v));
        if (isShortestNumber(v)) expect(reference(v)).toBe(v);
      }),
      { numRuns: 20_000 },
    );
  });

  it('takes the shortcut for the numbers sheets hold', () => {
    for (const v of ['0', '7', '-19', '2.01', '0.5', '-0.25', '123456789012345', '49.9']) expect(isShortestNumber(v)).toBe(true);
    for (const v of ['-0', '007', '2.50', '0.05', '1e5', '1234567890123456', '5.', '']) expect(isShortestNumber(v)).toBe(false);
  });
});
