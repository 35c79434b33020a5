import { z } from 'zod';
import { regexString } from './regex.js';
import { unionMessage } from './union-message.js';

/** The grammar numbers are written in; the mapping's `numbers` gives it to every number and integer transform without their own. */
export const numberGrammarSchema = z
  .strictObject({
    decimal_separator: z.enum(['.', ',']).default('.').describe('Decimal mark; "," for 1.234,5 style numbers.'),
    thousands_separator: z
      .enum([',', '.', ' ', "'", ''])
      .default('')
      .describe('Grouping mark allowed between groups of three digits ("" for none: 1,250 is then a row error); must differ from decimal_separator.'),
    exponent: z.boolean().default(false).describe('Accept scientific notation such as 1.2E+3 (false: a row error, as spreadsheets write it for mangled values).'),
  })
  .describe('How numbers are written: anything else is a row error.');
export type NumberGrammar = z.output<typeof numberGrammarSchema>;

// Each key is optional here: what a transform leaves out comes from the mapping's `numbers`.
const numberOptions = z.strictObject({
  decimal_separator: z.enum(['.', ',']).optional().describe('Decimal mark; default: mapping.numbers.decimal_separator (".").'),
  thousands_separator: z.enum([',', '.', ' ', "'", '']).optional().describe('Grouping mark; default: mapping.numbers.thousands_separator ("", none).'),
  exponent: z.boolean().optional().describe('Accept scientific notation; default: mapping.numbers.exponent (false).'),
});
export type NumberOptions = z.output<typeof numberOptions>;

/** Transforms that may be written as a bare name (their defaults). */
export const TRANSFORM_NAMES = [
  'trim',
  'collapse_spaces',
  'strip_prefix',
  'number',
  'integer',
  'boolean',
  'date',
  'split',
  'lowercase',
  'uppercase',
  'nfkc',
  'fix_scientific',
] as const;

/** Every transform, bare or with options. */
export const ALL_TRANSFORM_NAMES = [...TRANSFORM_NAMES, 'default', 'null_words', 'regex_replace'] as const;

export const DATE_ORDERS = ['ymd', 'dmy', 'mdy'] as const;

const booleanOptions = z
  .strictObject({
    true_words: z.array(z.string()).min(1).default(['true', 'y', 'yes', '1']).describe('Words meaning true (case-insensitive unless mapping.match_case); "" is an empty cell.'),
    false_words: z
      .array(z.string())
      .min(1)
      .default(['false', 'n', 'no', '0'])
      .describe('Words meaning false (case-insensitive unless mapping.match_case); "" is an empty cell, e.g. [False, ""] for Odoo.'),
  })
  .superRefine((b, ctx) => {
    const trueWords = new Set(b.true_words.map((w) => w.trim().toLowerCase()));
    for (const w of b.false_words) {
      if (trueWords.has(w.trim().toLowerCase())) ctx.addIssue({ code: 'custom', path: ['false_words'], message: `"${w.trim()}" is listed as both true and false` });
    }
  })
  .describe('Parse a boolean, e.g. true_words: [表示], false_words: [非表示]; anything else is a row error, and so is an empty cell unless "" is listed or a default follows.');

const withOptions = [
  z.strictObject({ strip_prefix: z.strictObject({ chars: z.string().min(1).default("'#").describe('Leading characters removed (spreadsheet text marks).') }) }),
  z.strictObject({ number: numberOptions.describe('Parse a number in the mapping\'s grammar (or these options); empty stays empty.') }),
  z.strictObject({ integer: numberOptions.describe('Parse a whole number; a fraction is a row error.') }),
  z.strictObject({ boolean: booleanOptions }),
  z.strictObject({
    date: z
      .strictObject({
        order: z.enum(DATE_ORDERS).default('ymd').describe('Order of day, month and year in text dates such as 15.03.2024 (dmy) or 3/15/2024 (mdy); a date starting with a 4-digit year is always year-month-day.'),
      })
      .describe('Parse a date (an XLSX date cell, or text such as 2024/3/15 or 15.03.2024) into YYYY-MM-DD; a time of day is dropped; empty stays empty.'),
  }),
  z.strictObject({ split: z.strictObject({ separator: z.string().min(1).default('|').describe('Separator of list items (A14 uses |).') }) }),
  z.strictObject({ default: z.union([z.string(), z.number(), z.boolean()]).describe('Value used when the value is empty.') }),
  z.strictObject({
    null_words: z.array(z.string()).min(1).describe('Values meaning "no value" (e.g. not stocked, variable), matched after trimming (case-insensitive unless mapping.match_case); they become empty.'),
  }),
  z.strictObject({
    regex_replace: z
      .strictObject({
        pattern: regexString.describe('Regular expression (Unicode).'),
        replacement: z.string().default('').describe('Replacement; $1… refer to groups.'),
        flags: z.string().regex(/^[gimsuy]*$/).default('g').describe('Regular expression flags (u is always added).'),
      })
      .describe('Replace text by a regular expression.'),
  }),
] as const;

const EXAMPLE: Record<string, string> = { default: '0', null_words: '[not stocked]', regex_replace: '{ pattern: "-", replacement: "" }' };
const KNOWN = `known transforms: ${ALL_TRANSFORM_NAMES.join(', ')}`;

/** What is wrong with a transform, named in the words of the YAML file (zod alone says "Invalid input"). */
function transformMessage(input: unknown, branchIssues: readonly (readonly z.core.$ZodIssue[])[]): string {
  if (typeof input === 'string') {
    if ((ALL_TRANSFORM_NAMES as readonly string[]).includes(input)) return `transform "${input}" needs its options, e.g. { ${input}: ${EXAMPLE[input] ?? '…'} }`;
    return `unknown transform "${input}" (${KNOWN})`;
  }
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return `expected a transform: a name such as trim, or a name with options such as { number: { decimal_separator: "," } } (${KNOWN})`;
  }
  const keys = Object.keys(input);
  if (keys.length !== 1) return `a transform is one name with its options, e.g. { split: { separator: ";" } }; this one has ${keys.length === 0 ? 'none' : `${keys.length}: ${keys.join(', ')}`}`;
  const name = keys[0]!;
  if (!(ALL_TRANSFORM_NAMES as readonly string[]).includes(name)) return `unknown transform "${name}" (${KNOWN})`;
  // The branch of that name is the one whose issues are not about the name itself.
  const own = branchIssues.find((issues) => issues.length > 0 && issues.every((i) => i.path[0] === name));
  return own ? unionMessage(own[0]!) : `${name}: options not valid`;
}

/** Named transforms, applied in order. A bare name uses the defaults. */
export const transformSchema = z.union([z.enum(TRANSFORM_NAMES).describe('A transform with its default options.'), ...withOptions], {
  error: (iss) => (iss.code === 'invalid_union' ? transformMessage(iss.input, iss.errors) : undefined),
}).meta({ id: 'Transform' });
export type TransformSpec = z.output<typeof transformSchema>;
