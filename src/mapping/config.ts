import { z } from 'zod';
import { regexString } from './regex.js';
import { numberGrammarSchema, transformSchema, type TransformSpec } from './transform-config.js';
import { matchingBranch, unionMessage } from './union-message.js';

export { regexString };
export { transformSchema, TRANSFORM_NAMES, ALL_TRANSFORM_NAMES, type TransformSpec } from './transform-config.js';

/** A column picked by exact (cleaned) header name, by 1-based position, or by a pattern that must match exactly one header. */
export const columnRefSchema = z
  .union(
    [
      z.string().min(1).describe('Exact header name (after cleaning).'),
      z.strictObject({ column: z.string().min(1).describe('Exact header name (after cleaning).') }),
      z.strictObject({ column_index: z.number().int().min(1).describe('1-based column position (A = 1); use it for duplicate header names.') }),
      z.strictObject({ column_pattern: regexString.describe('Regular expression that exactly one header name must match, e.g. "^In stock \\\\[.*\\\\]$".') }),
    ],
    { error: (iss) => (iss.code === 'invalid_union' ? 'expected a header name, or one of { column: … }, { column_index: 3 }, { column_pattern: "…" }' : undefined) },
  )
  .meta({ id: 'ColumnRef' });
export type ColumnRef = z.output<typeof columnRefSchema>;

/** One test of one cell: it is one of some words, or it is (not) empty. */
const cellTestSchema = z
  .strictObject({
    column: columnRefSchema.describe('The column tested.'),
    one_of: z
      .array(z.string())
      .min(1)
      .optional()
      .describe('True when the cell, trimmed, is one of these words ("" is an empty cell; case-insensitive unless mapping.match_case).'),
    empty: z.boolean().optional().describe('true: true when the cell is empty (or blank); false: true when it is not.'),
  })
  .refine((c) => (c.one_of === undefined) !== (c.empty === undefined), { message: 'give one of one_of or empty' })
  .meta({ id: 'CellTest' });
export type CellTest = z.output<typeof cellTestSchema>;

/** A condition: a cell test, or all / any of several (one level deep: (A and B) or C). */
export const conditionSchema = z
  .strictObject({
    column: columnRefSchema.optional().describe('The column tested (with one_of or empty).'),
    one_of: cellTestSchema.shape.one_of,
    empty: cellTestSchema.shape.empty,
    all: z.array(cellTestSchema).min(1).optional().describe('True when every test is true.'),
    any: z.array(cellTestSchema).min(1).optional().describe('True when at least one test is true.'),
  })
  .refine(
    (c) => (c.column !== undefined ? (c.one_of === undefined) !== (c.empty === undefined) && c.all === undefined && c.any === undefined : (c.all === undefined) !== (c.any === undefined) && c.one_of === undefined && c.empty === undefined),
    { message: 'a condition is { column: …, one_of: [words] }, { column: …, empty: true|false }, or { all: [tests] } / { any: [tests] }' },
  )
  .meta({ id: 'Condition' });
export type Condition = z.output<typeof conditionSchema>;

const SOURCES = ['column', 'column_index', 'column_pattern', 'const', 'template', 'columns', 'all', 'any'] as const;

const fieldObjectSchema = z
  .strictObject({
    column: z.string().min(1).optional().describe('Exact header name (after cleaning).'),
    column_index: z.number().int().min(1).optional().describe('1-based column position (for duplicate or missing header names).'),
    column_pattern: regexString.optional().describe('Regular expression that exactly one header must match (store names inside headers).'),
    const: z.union([z.string(), z.number(), z.boolean(), z.null()]).optional().describe('A constant value.'),
    template: z.string().min(1).optional().describe('Text with {Header} (or {#3} for column 3) placeholders, e.g. "{Name} {Size}".'),
    placeholder_transforms: z
      .record(z.string().min(1), z.array(transformSchema))
      .optional()
      .describe('template: transforms applied to one placeholder\'s cell before it is put in the text, by placeholder ("Size", "#3"), e.g. { Size: [trim, uppercase] }.'),
    columns: z.array(columnRefSchema).min(1).optional().describe('Several columns joined by `separator` (a record key from several columns).'),
    separator: z.string().default('-').describe('Joins `columns`; empty parts are left out.'),
    all: z.array(conditionSchema).min(1).optional().describe('A boolean that is true when every condition is (active, attributes), e.g. Sellable is Y and Archived is N.'),
    any: z.array(conditionSchema).min(1).optional().describe('A boolean that is true when at least one condition is (active, attributes).'),
    empty_is_null: z
      .boolean()
      .default(false)
      .describe('attributes: an empty (or blank) cell, and an empty result of the transforms, is null (no value) rather than "".'),
    transforms: z.array(transformSchema).default([]).describe('Transforms applied in order.'),
  })
  .refine((f) => SOURCES.filter((k) => f[k] !== undefined).length === 1, { message: `give exactly one of ${SOURCES.join(', ')}` });

/** Where one record field's value comes from, then the transforms applied to it. */
export const fieldSpecSchema = z.union([z.string().min(1).describe('Shorthand for { column: <name> }.'), fieldObjectSchema], {
  error: (iss) => {
    if (iss.code !== 'invalid_union') return undefined;
    const own = matchingBranch(iss.errors);
    return own?.[0] ? unionMessage(own[0]) : `expected a header name, or { column: …, transforms: […] } (or column_index, column_pattern, const, template, columns, all, any)`;
  },
});
export type FieldSpec = z.output<typeof fieldSpecSchema>;
export type FieldObject = z.output<typeof fieldObjectSchema>;

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

/** The placeholders of a template, as written between braces ("Name", "#3"). */
export function templatePlaceholders(template: string): string[] {
  return [...template.matchAll(/\{([^{}]+)\}/g)].map((m) => m[1]!);
}

/** Cross-option checks of one field (pure): each message with the path below the field. */
function fieldIssues(field: string, spec: FieldObject, numbers: z.output<typeof numberGrammarSchema>): { path: PropertyKey[]; message: string }[] {
  const out: { path: PropertyKey[]; message: string }[] = [];
  const attribute = field.startsWith('attributes.');
  for (const k of ['all', 'any'] as const) {
    if (spec[k] !== undefined && !attribute && field !== 'active') out.push({ path: [k], message: `${k} gives true or false: only active and attributes.<key> can use it` });
  }
  if (spec.empty_is_null && !attribute) out.push({ path: ['empty_is_null'], message: `only attributes can be null; ${field} cannot` });
  if (spec.placeholder_transforms !== undefined) {
    if (spec.template === undefined) out.push({ path: ['placeholder_transforms'], message: 'placeholder_transforms needs a template' });
    else {
      const names = templatePlaceholders(spec.template);
      for (const k of Object.keys(spec.placeholder_transforms)) {
        if (!names.includes(k)) out.push({ path: ['placeholder_transforms', k], message: `"${k}" is not a placeholder of the template (it has ${names.map((n) => `{${n}}`).join(', ') || 'none'})` });
      }
    }
  }
  const lists: [PropertyKey[], TransformSpec[]][] = [[['transforms'], spec.transforms], ...Object.entries(spec.placeholder_transforms ?? {}).map(([k, t]): [PropertyKey[], TransformSpec[]] => [['placeholder_transforms', k], t])];
  for (const [at, list] of lists) {
    list.forEach((t, i) => {
      const opts = typeof t === 'object' && 'number' in t ? t.number : typeof t === 'object' && 'integer' in t ? t.integer : null;
      if (opts === null) return;
      const dec = opts.decimal_separator ?? numbers.decimal_separator;
      const thousands = opts.thousands_separator ?? numbers.thousands_separator;
      if (dec === thousands) out.push({ path: [...at, i], message: `the decimal and thousands separators are both "${dec}"; set them apart (here or in mapping.numbers)` });
    });
  }
  return out;
}

const mappedFieldsSchema = z.record(
  z.string().regex(MAPPED_FIELD_PATTERN, 'expected record_id, display_name, api_value, aliases, active or attributes.<key>'),
  fieldSpecSchema,
);

/** A mapping whose `fields` must map `required` (a full export: every record field; a feed of some fields: record_id alone). */
function mappingSchemaRequiring(required: readonly string[], message: string) {
  return z
    .strictObject({
      fields: mappedFieldsSchema
        .refine((f) => required.every((k) => k in f), { message })
        .describe('Record field → source. aliases are split on "|" unless a split transform says otherwise (equal aliases are kept once); active defaults to true.'),
      filters: filtersSchema.default(() => filtersSchema.parse({})),
      numbers: numberGrammarSchema
        .default(() => numberGrammarSchema.parse({}))
        .describe('The grammar of every number and integer transform that does not give its own: plain 1250 and 3.5 by default; for 1,250 and 1.2E+3 (what the connector accepted before 0.2) set { thousands_separator: ",", exponent: true }.'),
      match_case: z.boolean().default(false).describe('Match boolean words, null_words and condition words with their case (Y is then not y).'),
    })
    .superRefine((m, ctx) => {
      for (const [field, spec] of Object.entries(m.fields)) {
        if (typeof spec === 'string') continue;
        for (const issue of fieldIssues(field, spec, m.numbers)) ctx.addIssue({ code: 'custom', path: ['fields', field, ...issue.path], message: issue.message });
      }
    });
}

/** The fields a full export must map: a record is made of nothing less. */
export const REQUIRED_FIELDS = ['record_id', 'display_name', 'api_value'] as const;

/** How rows of the export become records (A6 fields). */
export const mappingConfigSchema = mappingSchemaRequiring(REQUIRED_FIELDS, 'record_id, display_name and api_value must be mapped')
  .meta({ id: 'MappingConfig' })
  .describe('Column → record field mapping, with transforms and row filters; no code.');

/**
 * The mapping of a feed (issue 13): record_id plus the fields it owns. A full
 * feed must map display_name and api_value too (its feed rule says so); an
 * update feed maps only what it sets, e.g. attributes.stock.
 */
export const feedMappingConfigSchema = mappingSchemaRequiring(['record_id'], 'record_id must be mapped: a feed finds its records by it')
  .meta({ id: 'FeedMappingConfig' })
  .describe('Column → record field mapping of a feed: record_id and the fields the feed owns, with transforms and row filters; no code.');

/**
 * A field or row filter the connector made from another setting (issue 13):
 * a change list's command column is read as a field, a shared export's
 * `rows` as a row filter. A message about it names that setting, never the
 * internal key it is read under.
 */
export interface MadeSetting {
  /** The setting as the user wrote it, e.g. feeds.changes.commands.column. */
  setting: string;
  /** What it is, e.g. "the command column of change list changes of dataset shop-1". */
  what: string;
  /** What to do when its column cannot be found. */
  fix: string;
  /** A feed's rows, as written (e.g. Store equals "000"): a file of which it takes no row is told with it. */
  rows?: { setting: string; says: string; dataset: string };
}

export type MappingConfig = z.output<typeof mappingConfigSchema> & {
  /** Never in YAML: the settings that fields (by field) and keep_when_match filters (by index) the connector made stand for. */
  made?: { fields?: Readonly<Record<string, MadeSetting>>; keep?: ReadonlyArray<MadeSetting | undefined> };
  /** Never in YAML: a feed's row (issue 13) may leave display_name and api_value empty, "no value" for the merge to judge. */
  blanksAreNoValue?: boolean;
  /** Never in YAML: a check of each row's record as mapped (a change list's command, issue 13), see RowCheck. */
  rowCheck?: RowCheck;
};

/**
 * What a row's own meaning makes of it, beside its values (a change list's command word): its row errors
 * (`problems`), and `idOnly` when only its record_id is used (a delete or ignore row: errors of its other cells
 * are no errors of the file).
 */
export type RowCheck = (record: { record_id: string; display_name: string; api_value: string; attributes: Record<string, unknown> }, line: number) => {
  problems: Array<{ column: string; value: string; reason: string; code: 'INVALID_COMMAND' | 'INVALID_RECORD' }>;
  idOnly: boolean;
};
export type MappingConfigInput = z.input<typeof mappingConfigSchema>;
