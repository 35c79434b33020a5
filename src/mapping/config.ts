import { z } from 'zod';

/** A string that compiles as a Unicode regular expression (config patterns). */
export const regexString = z.string().refine(
  (s) => {
    try {
      new RegExp(s, 'u');
      return true;
    } catch {
      return false;
    }
  },
  { message: 'not a valid regular expression' },
);

/** A column picked by exact (cleaned) header name, by 1-based position, or by a pattern that must match exactly one header. */
export const columnRefSchema = z.union([
  z.string().min(1).describe('Exact header name (after cleaning).'),
  z.strictObject({ column: z.string().min(1).describe('Exact header name (after cleaning).') }),
  z.strictObject({ column_index: z.number().int().min(1).describe('1-based column position (A = 1); use it for duplicate header names.') }),
  z.strictObject({ column_pattern: regexString.describe('Regular expression that exactly one header name must match, e.g. "^In stock \\\\[.*\\\\]$".') }),
]);
export type ColumnRef = z.output<typeof columnRefSchema>;

const numberOptions = z.strictObject({
  decimal_separator: z.enum(['.', ',']).default('.').describe('Decimal mark; "," for 1.234,5 style numbers.'),
  thousands_separator: z
    .enum([',', '.', ' ', "'", ''])
    .default(',')
    .describe('Grouping mark removed before parsing ("" for none); must differ from decimal_separator.'),
});

/** Named transforms, applied in order. A bare name uses the defaults. */
export const TRANSFORM_NAMES = [
  'trim',
  'collapse_spaces',
  'strip_prefix',
  'number',
  'integer',
  'boolean',
  'split',
  'lowercase',
  'uppercase',
  'nfkc',
  'fix_scientific',
] as const;

export const transformSchema = z.union([
  z.enum(TRANSFORM_NAMES).describe('A transform with its default options.'),
  z.strictObject({ strip_prefix: z.strictObject({ chars: z.string().min(1).default("'#").describe('Leading characters removed (spreadsheet text marks).') }) }),
  z.strictObject({ number: numberOptions.describe('Parse a number; empty stays empty.') }),
  z.strictObject({ integer: numberOptions.describe('Parse a whole number; a fraction is a row error.') }),
  z.strictObject({
    boolean: z
      .strictObject({
        true_words: z
          .array(z.string())
          .min(1)
          .default(['true', 'y', 'yes', '1'])
          .describe('Words meaning true (case-insensitive); "" is an empty cell.'),
        false_words: z
          .array(z.string())
          .min(1)
          .default(['false', 'n', 'no', '0'])
          .describe('Words meaning false (case-insensitive); "" is an empty cell, e.g. [False, ""] for Odoo.'),
      })
      .superRefine((b, ctx) => {
        const trueWords = new Set(b.true_words.map((w) => w.trim().toLowerCase()));
        for (const w of b.false_words) {
          if (trueWords.has(w.trim().toLowerCase())) ctx.addIssue({ code: 'custom', path: ['false_words'], message: `"${w.trim()}" is listed as both true and false` });
        }
      })
      .describe(
        'Parse a boolean, e.g. true_words: [表示], false_words: [非表示]; anything else is a row error, and so is an empty cell unless "" is listed or a default follows.',
      ),
  }),
  z.strictObject({ split: z.strictObject({ separator: z.string().min(1).default('|').describe('Separator of list items (A14 uses |).') }) }),
  z.strictObject({ default: z.union([z.string(), z.number(), z.boolean()]).describe('Value used when the value is empty.') }),
  z.strictObject({ null_words: z.array(z.string()).min(1).describe('Values meaning "no value" (e.g. not stocked, variable), matched case-insensitively after trimming; they become empty.') }),
  z.strictObject({
    regex_replace: z
      .strictObject({
        pattern: regexString.describe('Regular expression (Unicode).'),
        replacement: z.string().default('').describe('Replacement; $1… refer to groups.'),
        flags: z.string().regex(/^[gimsuy]*$/).default('g').describe('Regular expression flags (u is always added).'),
      })
      .describe('Replace text by a regular expression.'),
  }),
]);
export type TransformSpec = z.output<typeof transformSchema>;

/** Where one record field's value comes from, then the transforms applied to it. */
export const fieldSpecSchema = z.union([
  z.string().min(1).describe('Shorthand for { column: <name> }.'),
  z
    .strictObject({
      column: z.string().min(1).optional().describe('Exact header name (after cleaning).'),
      column_index: z.number().int().min(1).optional().describe('1-based column position (for duplicate or missing header names).'),
      column_pattern: regexString.optional().describe('Regular expression that exactly one header must match (store names inside headers).'),
      const: z.union([z.string(), z.number(), z.boolean(), z.null()]).optional().describe('A constant value.'),
      template: z.string().min(1).optional().describe('Text with {Header} (or {#3} for column 3) placeholders, e.g. "{Name} {Size}".'),
      columns: z.array(columnRefSchema).min(1).optional().describe('Several columns joined by `separator` (a record key from several columns).'),
      separator: z.string().default('-').describe('Joins `columns`; empty parts are left out.'),
      transforms: z.array(transformSchema).default([]).describe('Transforms applied in order.'),
    })
    .refine(
      (f) => ['column', 'column_index', 'column_pattern', 'const', 'template', 'columns'].filter((k) => (f as Record<string, unknown>)[k] !== undefined).length === 1,
      { message: 'give exactly one of column, column_index, column_pattern, const, template, columns' },
    ),
]);
export type FieldSpec = z.output<typeof fieldSpecSchema>;

export const MAPPED_FIELD_PATTERN = /^(record_id|display_name|api_value|aliases|active|attributes\.(?!__proto__$)[A-Za-z0-9_]{1,64})$/;

/** Row filters: which rows become records (others are counted as filtered, not as errors). */
export const filtersSchema = z
  .strictObject({
    skip_when_empty: z.array(columnRefSchema).default([]).describe('Skip a row when any of these columns is empty (continuation or image-only rows).'),
    keep_when_match: z
      .array(
        z.strictObject({
          column: columnRefSchema.describe('The column tested.'),
          pattern: regexString.describe('Keep the row only when the cell matches this regular expression.'),
        }),
      )
      .default([])
      .describe('Keep a row only when every listed column matches its pattern.'),
  })
  .describe('Row filters.');

/** How rows of the export become records (A6 fields). */
export const mappingConfigSchema = z
  .strictObject({
    fields: z
      .record(
        z.string().regex(MAPPED_FIELD_PATTERN, 'expected record_id, display_name, api_value, aliases, active or attributes.<key>'),
        fieldSpecSchema,
      )
      .refine((f) => ['record_id', 'display_name', 'api_value'].every((k) => k in f), {
        message: 'record_id, display_name and api_value must be mapped',
      })
      .describe('Record field → source. aliases are split on "|" unless a split transform says otherwise; active defaults to true.'),
    filters: filtersSchema.default(() => filtersSchema.parse({})),
  })
  .meta({ id: 'MappingConfig' })
  .describe('Column → record field mapping, with transforms and row filters; no code.');

export type MappingConfig = z.output<typeof mappingConfigSchema>;
export type MappingConfigInput = z.input<typeof mappingConfigSchema>;
