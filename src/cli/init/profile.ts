import type { TransformSpec } from '../../mapping/transform-config.js';
import { readDate, type DateOrder } from '../../mapping/date.js';
import { RECORD_ID_PATTERN } from '../../model/record.js';

/** What one column holds, as seen in the sample, and the transforms that read it. */
export interface ColumnProfile {
  index: number;
  name: string;
  /** How the mapping picks it: the header name, or the position when the name is empty or not unique. */
  ref: string | { column_index: number };
  filled: number;
  empty: number;
  distinct: number;
  kind: 'empty' | 'integer' | 'number' | 'boolean' | 'date' | 'identifier' | 'text';
  /** A person-readable account of what was seen, for the config's comment. */
  seen: string;
  transforms: TransformSpec[];
  /** boolean: the words seen, as written. */
  trueWords?: string[];
  falseWords?: string[];
  /** Every filled value a valid record_id once the transforms are applied, and no two the same. */
  idLike: boolean;
  unique: boolean;
  /** Values as they are after `transforms` would apply the text steps (trim, strip_prefix). */
  examples: string[];
}

const BOOLEAN_PAIRS: Array<[string[], string[]]> = [
  [['true'], ['false']],
  [['yes'], ['no']],
  [['y'], ['n']],
  [['on'], ['off']],
  [['1'], ['0']],
  [['表示'], ['非表示']],
  [['有効'], ['無効']],
  [['公開'], ['非公開']],
  [['販売'], ['停止', '販売停止']],
  [['○', '〇'], ['×', '✕']],
  [['する'], ['しない']],
  [['active'], ['inactive', 'archived']],
  [['sí', 'si'], ['no']],
];

const SCIENTIFIC = /^[+-]?\d+(?:[.,]\d+)?[eE][+-]?\d+$/;

function booleanWords(values: string[]): { t: string[]; f: string[] } | null {
  const seen = [...new Set(values)];
  for (const [t, f] of BOOLEAN_PAIRS) {
    const lower = (w: string) => w.toLowerCase();
    if (seen.every((v) => t.includes(lower(v)) || f.includes(lower(v)))) {
      const ts = seen.filter((v) => t.includes(lower(v)));
      const fs = seen.filter((v) => f.includes(lower(v)));
      // Both sides named, from what was seen, or from the pair when a side was not seen.
      return { t: ts.length > 0 ? ts : [t[0]!], f: fs.length > 0 ? fs : [f[0]!] };
    }
  }
  return null;
}

type Grammar = { decimal_separator: '.' | ','; thousands_separator: '' | ',' | '.' | ' ' | "'"; exponent: boolean };

/** The narrowest number grammar every value fits, or null. */
function numberGrammar(values: string[], delimiter: string): { g: Grammar; integer: boolean; note: string } | null {
  const plainInt = /^[+-]?\d+$/;
  const plainDec = /^[+-]?(\d+\.\d+|\.\d+)$/;
  if (values.every((v) => plainInt.test(v))) return { g: { decimal_separator: '.', thousands_separator: '', exponent: false }, integer: true, note: 'whole numbers' };
  if (values.every((v) => plainInt.test(v) || plainDec.test(v))) return { g: { decimal_separator: '.', thousands_separator: '', exponent: false }, integer: false, note: 'numbers with a decimal point' };
  const commaGroups = /^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$/;
  const commaDecimal = /^[+-]?\d+,\d+$/;
  const dotGroupsCommaDecimal = /^[+-]?\d{1,3}(\.\d{3})+(,\d+)?$/;
  const fits = (re: RegExp[]) => values.every((v) => plainInt.test(v) || re.some((r) => r.test(v)));
  const isInt = (vs: string[], dec: string) => vs.every((v) => !v.includes(dec));
  const onlyGroupLike = values.every((v) => plainInt.test(v) || /^[+-]?\d{1,3}(,\d{3})+$/.test(v));
  if (fits([commaGroups, plainDec]) && !(onlyGroupLike && delimiter === ';')) {
    return { g: { decimal_separator: '.', thousands_separator: ',', exponent: false }, integer: isInt(values, '.'), note: `numbers with "," between thousands${onlyGroupLike ? ' (1,250 read as 1250, not 1.25: CHECK)' : ''}` };
  }
  if (fits([commaDecimal, dotGroupsCommaDecimal])) {
    const dots = values.some((v) => v.includes('.'));
    return { g: { decimal_separator: ',', thousands_separator: dots ? '.' : '', exponent: false }, integer: isInt(values, ','), note: `numbers with a decimal comma${dots ? ' and "." between thousands' : ''}` };
  }
  if (values.every((v) => plainInt.test(v) || plainDec.test(v) || SCIENTIFIC.test(v))) {
    return { g: { decimal_separator: '.', thousands_separator: '', exponent: true }, integer: false, note: 'numbers, some in scientific notation (1.2E+3)' };
  }
  return null;
}

/** Dates all readable in one order; null when they are not dates, or the order cannot be told (then not guessed). */
function dateOrder(values: string[]): { order: DateOrder; note: string } | 'ambiguous' | null {
  if (!values.every((v) => /\d{1,4}[-/.年]\d{1,2}[-/.月]\d{1,4}/.test(v))) return null;
  const orders: DateOrder[] = ['ymd', 'dmy', 'mdy'];
  const ok = orders.filter((o) => values.every((v) => {
    const d = readDate(v, o);
    return d !== null && d.m >= 1 && d.m <= 12 && d.d >= 1 && d.d <= 31;
  }));
  if (ok.includes('ymd') && values.every((v) => /^\d{4}/.test(v))) return { order: 'ymd', note: 'dates, year first' };
  if (ok.length === 1) return { order: ok[0]!, note: `dates in ${ok[0]} order` };
  return ok.length > 1 ? 'ambiguous' : null;
}

const hasOuterSpace = (v: string) => v !== v.trim();

/** Profile one column from the sample's data rows (cells as read). */
export function profileColumn(index: number, name: string, ref: ColumnProfile['ref'], rows: string[][], delimiter: string): ColumnProfile {
  const raw = rows.map((r) => r[index] ?? '');
  const trimmed = raw.map((v) => v.trim());
  const values = trimmed.filter((v) => v !== '');
  const empty = raw.length - values.length;
  const distinct = new Set(values).size;
  const base = { index, name, ref, filled: values.length, empty, distinct, unique: distinct === values.length && values.length > 0 };
  const trim: TransformSpec[] = raw.some(hasOuterSpace) ? ['trim'] : [];
  const emptyNote = empty > 0 ? `, ${empty} empty` : '';
  if (values.length === 0) return { ...base, kind: 'empty', seen: 'empty in every row read', transforms: [], idLike: false, examples: [] };

  const prefixed = values.some((v) => /^['#]/.test(v)) && values.every((v) => /^['#]?[^'#]/.test(v));
  const scientific = values.some((v) => SCIENTIFIC.test(v));
  const idValues = values.map((v) => (prefixed ? v.replace(/^['#]/, '') : v));
  const idLike = idValues.every((v) => RECORD_ID_PATTERN.test(v) || SCIENTIFIC.test(v));
  const idTransforms: TransformSpec[] = [...trim, ...(prefixed ? (['strip_prefix'] as const) : []), ...(scientific ? (['fix_scientific'] as const) : [])];
  const examples = [...new Set(idValues)].slice(0, 3);

  const words = distinct <= 2 ? booleanWords(values) : null;
  if (words && !(words.t.join() === '1' && words.f.join() === '0' && !/active|enable|visible|flag|表示|公開|有効|販売/i.test(name))) {
    return {
      ...base,
      kind: 'boolean',
      seen: `yes/no words ${[...words.t, ...words.f].map((w) => JSON.stringify(w)).join('/')}${emptyNote}`,
      transforms: [],
      trueWords: words.t,
      falseWords: words.f,
      idLike: false,
      examples,
    };
  }
  // Codes: digits with leading zeros, long digit strings (JAN, GTIN) and spreadsheet-mangled ones stay text.
  const codeLike = values.every((v) => /^\d+$/.test(v)) && (values.some((v) => /^0\d/.test(v)) || values.some((v) => v.length >= 8));
  if ((codeLike || (scientific && values.every((v) => /^\d/.test(v) && v.replace(/\D/g, '').length >= 6))) && idLike) {
    return { ...base, kind: 'identifier', seen: `codes of digits${scientific ? ', some written in scientific notation by a spreadsheet' : ''}${emptyNote}`, transforms: idTransforms, idLike: true, examples };
  }
  const num = numberGrammar(values, delimiter);
  if (num) {
    const { g, integer } = num;
    const plain = g.decimal_separator === '.' && g.thousands_separator === '' && !g.exponent;
    const opts = { ...(g.decimal_separator !== '.' ? { decimal_separator: g.decimal_separator } : {}), ...(g.thousands_separator !== '' ? { thousands_separator: g.thousands_separator } : {}), ...(g.exponent ? { exponent: true } : {}) };
    const t: TransformSpec = plain ? (integer ? 'integer' : 'number') : integer ? { integer: opts } : { number: opts };
    return { ...base, kind: integer ? 'integer' : 'number', seen: `${num.note}${emptyNote}`, transforms: [t], idLike, examples };
  }
  const date = dateOrder(values);
  if (date === 'ambiguous') {
    return { ...base, kind: 'text', seen: `dates whose day and month cannot be told apart in the rows read (03/04/2024): left as text; CHECK and add { date: { order: dmy } } or mdy${emptyNote}`, transforms: trim, idLike, examples };
  }
  if (date) {
    return { ...base, kind: 'date', seen: `${date.note}${emptyNote}`, transforms: [date.order === 'ymd' ? 'date' : { date: { order: date.order } }], idLike: false, examples };
  }
  return { ...base, kind: 'text', seen: `text, ${distinct} different value${distinct === 1 ? '' : 's'}${emptyNote}`, transforms: idLike ? idTransforms : trim, idLike, examples };
}
