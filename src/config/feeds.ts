import { z } from 'zod';
import { valueRuleSchema } from './policy.js';
import { columnRefSchema, feedMappingConfigSchema, MAPPED_FIELD_PATTERN, REQUIRED_FIELDS } from '../mapping/config.js';
import { sourceConfigSchema } from '../sources/config.js';
import { watchConfigSchema } from './watch.js';
import { schedulesConfigSchema } from './schedules.js';
import { EXPORT_NAME, rowsConfigSchema } from './exports.js';
import type { SourceConfig } from '../sources/config.js';

/** Names of feeds as keys under `feeds:` (logs, metrics, the state db). */
export const FEED_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** The feed a dataset written in the single-source form has (normalise.ts). */
export const MAIN_FEED = 'main';

/** What a feed's file means for the dataset (issue 13). */
export const FEED_ROLES = ['full', 'update', 'changes'] as const;
export type FeedRole = (typeof FEED_ROLES)[number];

/** Value guards of one feed, replacing the dataset's (policy.guards.values) for its changes. */
const feedGuardsSchema = z
  .strictObject({
    values: z
      .array(valueRuleSchema)
      .refine((rules) => new Set(rules.map((r) => r.field)).size === rules.length, 'each field may have one rule only')
      .optional()
      .describe("Value guards of this feed's changes; default: the dataset's policy.guards.values."),
  })
  .describe("Guards of this feed's changes, overriding the dataset's.");

/** What an update feed does to the records it may change that its file does not list (issue 13). */
export const missingConfigSchema = z
  .strictObject({
    strategy: z
      .enum(['leave', 'set', 'deactivate'])
      .default('leave')
      .describe(
        'leave: nothing; set: set fields to `values` (e.g. stock 0), which become this feed\'s values of those records (a catalogue sync keeps them); deactivate: active false, held so through catalogue syncs until this feed lists the record again (then active is what the full feed says, true by default). Guarded like deletes (max_delete_ratio, max_deletes of the records it may change). Default leave.',
      ),
    values: z
      .record(
        z.string().regex(MAPPED_FIELD_PATTERN, 'expected display_name, api_value, aliases, active or attributes.<key>'),
        z.union([z.string(), z.number(), z.boolean(), z.null()]),
      )
      .optional()
      .describe('strategy set: field → value, e.g. { attributes.stock: 0 }; only fields this feed maps.'),
  })
  .describe("Records the feed's file does not list: leave them, set fields, or deactivate them.");

export type MissingConfig = z.output<typeof missingConfigSchema>;

/** The commands of a change list (issue 13). */
export const COMMANDS = ['create', 'upsert', 'update', 'delete', 'ignore'] as const;
export type Command = (typeof COMMANDS)[number];

/** Words of each command by default (case-insensitive). */
export const DEFAULT_COMMAND_WORDS: Record<Command, string[]> = {
  create: ['create', 'add', 'new'],
  upsert: ['upsert'],
  update: ['update', 'change', 'modify'],
  delete: ['delete', 'remove', 'del'],
  ignore: ['ignore', 'skip'],
};

const words = (c: Command) =>
  z.array(z.string().min(1)).min(1).default(DEFAULT_COMMAND_WORDS[c]).describe(`Words meaning ${c} (case-insensitive). Default: ${DEFAULT_COMMAND_WORDS[c].join(', ')}.`);

/** The command column of a change list and its words. */
export const commandsConfigSchema = z
  .strictObject({
    column: columnRefSchema.describe('The column saying, per row, what to do with the record.'),
    words: z
      .strictObject({ create: words('create'), upsert: words('upsert'), update: words('update'), delete: words('delete'), ignore: words('ignore') })
      .default(() => ({ ...DEFAULT_COMMAND_WORDS }))
      .superRefine((w, ctx) => {
        const seen = new Map<string, string>();
        for (const [cmd, list] of Object.entries(w)) {
          for (const word of list) {
            const k = word.trim().toLowerCase();
            const first = seen.get(k);
            if (first !== undefined && first !== cmd) ctx.addIssue({ code: 'custom', path: [cmd], message: `"${word}" is a word of ${first} too` });
            seen.set(k, cmd);
          }
        }
      })
      .describe(
        'The words of each command: create (makes a record that does not exist, needs display_name and api_value; a record that exists is listed as RECORD_EXISTS, not changed), upsert (create or update), update (an existing record only; else UNMATCHED_RECORD), delete (owned records only, guarded), ignore.',
      ),
  })
  .describe('role changes: the column with the command of each row, and its words.');

export type CommandsConfig = z.output<typeof commandsConfigSchema>;

/** One export feeding a dataset: its trigger, source, mapping and role. */
export const feedConfigSchema = z
  .strictObject({
    role: z
      .enum(FEED_ROLES)
      .default('full')
      .describe(
        'full: its records are the dataset\'s records (records it no longer lists are deleted, within the guards); at most one per dataset. ' +
          'update: sets only the fields it maps on records that exist (matched by record_id); never creates or deletes. ' +
          'changes: a change list, a command per row (commands). Default full.',
      ),
    source: sourceConfigSchema.optional().describe("How the feed's file is read; a feed with from takes its export's."),
    from: z
      .string()
      .regex(EXPORT_NAME, 'expected the name of an export under exports:')
      .optional()
      .describe('Take the file of this shared export (exports: <name>) instead of a watch, schedules and source of its own.'),
    rows: rowsConfigSchema.optional(),
    mapping: feedMappingConfigSchema,
    watch: watchConfigSchema.optional(),
    schedules: schedulesConfigSchema,
    guards: feedGuardsSchema.optional(),
    missing: missingConfigSchema.default({ strategy: 'leave' }),
    commands: commandsConfigSchema.optional(),
    empty_clears: z
      .array(z.string().regex(MAPPED_FIELD_PATTERN, 'expected display_name, api_value, aliases, active or attributes.<key>'))
      .optional()
      .describe(
        'update and changes feeds: fields an empty cell clears (sets to no value). Any other empty mapped cell means "no value in this file": the field is left as it is for that row and counted (blankCells). Default: none.',
      ),
  })
  .superRefine((f, ctx) => {
    if (f.from !== undefined) {
      const own = { source: f.source !== undefined, watch: f.watch !== undefined, schedules: f.schedules.length > 0 };
      for (const [k, written] of Object.entries(own)) {
        if (written) ctx.addIssue({ code: 'custom', path: [k], message: `this feed takes its file from export "${f.from}": its ${k} is exports.${f.from}.${k} (remove ${k} here, or remove from: to give the feed its own)` });
      }
    } else if (f.source === undefined) {
      ctx.addIssue({ code: 'custom', path: ['source'], message: 'missing required option: expected source (how the file is read, e.g. { type: csv }), or from: <export> to take a shared export\'s file' });
    }
    const m = f.missing;
    if (m.strategy === 'set') {
      if (!m.values || Object.keys(m.values).length === 0) ctx.addIssue({ code: 'custom', path: ['missing', 'values'], message: 'strategy set needs values, e.g. { attributes.stock: 0 }' });
      for (const field of Object.keys(m.values ?? {})) {
        if (!(field in f.mapping.fields)) ctx.addIssue({ code: 'custom', path: ['missing', 'values', field], message: `${field} is not mapped by this feed: it may set only the fields it owns` });
      }
    } else if (m.values !== undefined) ctx.addIssue({ code: 'custom', path: ['missing', 'values'], message: 'values go with strategy: set' });
    if ((f.role === 'changes') !== (f.commands !== undefined)) {
      ctx.addIssue({ code: 'custom', path: ['commands'], message: f.role === 'changes' ? 'role changes needs commands: { column: <the command column> }' : 'commands go with role: changes' });
    }
    if (f.role !== 'update' && m.strategy !== 'leave') ctx.addIssue({ code: 'custom', path: ['missing', 'strategy'], message: f.role === 'full' ? 'a full feed deletes the records it does not list (within the guards): missing is for update feeds' : 'a change list says what to do per row: missing is for update feeds' });
    for (const [i, field] of (f.empty_clears ?? []).entries()) {
      if (f.role === 'full') ctx.addIssue({ code: 'custom', path: ['empty_clears'], message: 'a full feed\'s record is its row: empty_clears is for update and changes feeds' });
      else if (!(field in f.mapping.fields)) ctx.addIssue({ code: 'custom', path: ['empty_clears', i], message: `${field} is not mapped by this feed: empty_clears names fields it maps` });
    }
    if (f.role !== 'full') return;
    const missing = REQUIRED_FIELDS.filter((k) => !(k in f.mapping.fields));
    if (missing.length > 0) ctx.addIssue({ code: 'custom', path: ['mapping', 'fields'], message: 'record_id, display_name and api_value must be mapped' });
  })
  // A feed with from gets its export's source when the whole configuration is parsed (resolveExports, schema.ts).
  .transform((f) => f as Omit<typeof f, 'source'> & { source: SourceConfig })
  .meta({ id: 'FeedConfig' })
  .describe('One export feeding the dataset.');

export type FeedConfig = z.output<typeof feedConfigSchema>;

/** The feeds of a dataset by name. */
export const feedsConfigSchema = z
  .record(z.string().regex(FEED_NAME, 'expected a feed name of lowercase letters, digits, - and _ (at most 64)'), feedConfigSchema)
  .refine((f) => Object.keys(f).length > 0, 'expected at least one feed')
  .describe('The exports feeding this dataset, by name: one full catalogue and any number of update feeds. The single-source form (source, mapping, watch, schedules beside api) is one full feed named main.');

/** Which feed wins a field that two feeds map: a feed's name (it wins whenever it has a value), or newest (the value from the newest file). */
export const precedenceConfigSchema = z
  .record(
    z.string().regex(MAPPED_FIELD_PATTERN, 'expected display_name, api_value, aliases, active or attributes.<key>'),
    z.string().min(1).describe('The feed that wins whenever it has a value, or newest: the value of the most recently written file wins.'),
  )
  .default({})
  .describe(
    "For a field that two feeds map: the feed that wins, or newest. Holds whichever feed syncs: a losing feed's value is kept as its own, not published, and answers when the winner has no value (an empty cell). newest compares the files' modification times, never later than when the connector read them. Default: none (validate refuses such fields).",
  );
