import { ValueError } from './value.js';
import { excerpt } from '../model/excerpt.js';

const SCIENTIFIC = /^([+-]?)(\d+)(?:[.,](\d*))?[eE]\+?(\d{1,3})$/;

/**
 * Undo a spreadsheet's scientific notation of an identifier (4.901E+12 →
 * 4901000000000). When the exponent is larger than the digits shown, the
 * missing digits were lost and zeros would be a guess: a PRECISION_LOST row error.
 * Anything that is not in scientific notation comes back unchanged.
 */
export function fixScientific(text: string): string {
  const s = text.trim();
  const m = SCIENTIFIC.exec(s);
  if (!m) return text;
  const [, sign, int = '', frac = '', expText = '0'] = m;
  const exp = Number(expText);
  if (frac.length > exp) {
    throw new ValueError('TRANSFORM_FAILED', `${excerpt(s)} is a fraction in scientific notation, not an identifier`, s);
  }
  if (frac.length < exp) {
    throw new ValueError(
      'PRECISION_LOST',
      `${excerpt(s)} was written in scientific notation with only ${(int + frac).replace(/^0+/, '').length} significant digits, so the identifier's other digits are lost; format the column as text in the spreadsheet and export again`,
      s,
    );
  }
  const digits = (int + frac).replace(/^0+(?=\d)/, '');
  return sign === '-' ? `-${digits}` : digits;
}
