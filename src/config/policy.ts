import { z } from 'zod';

/**
 * How a dataset's changes are sent and when a person must decide: staging,
 * guards, ownership, and the per-record vs replace trade-off (issues 4 and 7).
 * Every option has a default; unknown keys are errors (house style 3).
 */

const ratio = z.number().min(0).max(1);

/** One value-guard rule (issue 14, value-guards.ts). */
export const valueRuleSchema = z
  .strictObject({
    field: z
      .string()
      .regex(/^(\*|display_name|api_value|aliases|active|attributes\.[A-Za-z0-9_]{1,64})$/, 'must be *, display_name, api_value, aliases, active or attributes.<key>')
      .describe('The field: attributes.<key>, display_name, api_value, aliases, active, or * for every field no other rule names.'),
    max_changed_ratio: ratio
      .optional()
      .describe('Hold a change in which the value of this field changes in more than this share (0–1) of the records present before and after. Default: off.'),
    max_zeroed_ratio: ratio
      .optional()
      .describe('Hold a change that sets this field to zero or empty in more than this share (0–1) of the records that had a value (not zero or empty) before. Default: off.'),
    jump_factor: z
      .number()
      .gt(1)
      .optional()
      .describe('A numeric value jumps when the new one is more than this many times, or less than this fraction of, the old one (10: ×10 or ÷10). Default: off.'),
    jump_percent: z
      .number()
      .gt(0)
      .optional()
      .describe('A numeric value jumps when it moves by more than this percentage of the old one. Default: off.'),
    max_jump_ratio: ratio
      .optional()
      .describe('Hold a change in which more than this share (0–1) of the records that had a non-zero number jump (jump_factor, jump_percent; a positive value turning negative always counts). Default: off.'),
    min_compared: z
      .int()
      .min(0)
      .default(20)
      .describe('Apply a share only when at least this many records count for it (present before and after; for zeroed: had a value; for jumps: had a non-zero number): a share of a handful is noise. Default 20.'),
    min_all_compared: z
      .int()
      .min(0)
      .default(3)
      .describe(
        'Below min_compared, still hold when every one of the records that could be hit (had a value before, for zeroed; a non-zero number, for jumps; at least this many) is set to zero or empty, or jumps (for the max_zeroed_ratio and max_jump_ratio this rule has): a small shop is protected from "every stock 0" too. 0: off. Default 3.',
      ),
  })
  .describe('A guard on the values of one field (or *): shares of records changed, zeroed, or jumping in one sync.');

/**
 * Defaults that hold "every stock to 0" and "every price ×100" and let an
 * ordinary day through: a quarter of the compared records set to zero or
 * empty, or a quarter jumping by more than ×10 / ÷10, in one sync, on any
 * field; with fewer than 20 compared records, when all of them (3 or more) do.
 */
export const DEFAULT_VALUE_RULES = [{ field: '*', max_zeroed_ratio: 0.25, jump_factor: 10, max_jump_ratio: 0.25, min_compared: 20, min_all_compared: 3 }];

/** Guards checked before anything is sent and again against the draft's counts. */
export const guardsSchema = z
  .strictObject({
    max_delete_ratio: ratio
      .lt(0.5, 'must be below 0.5: the server itself refuses deleting more than half (A5)')
      .default(0.2)
      .describe(
        'Hold a change that deletes more than this share (0–0.49) of the records the connector may delete (owned ones; all in ownership: full). Default 0.2.',
      ),
    max_deletes: z
      .int()
      .min(0)
      .optional()
      .describe('Hold a change that deletes more than this many records. Default: no limit.'),
    min_records: z
      .int()
      .min(0)
      .default(0)
      .describe('Hold a change that would leave fewer records than this in the dataset. Default 0 (off).'),
    max_row_drop_ratio: ratio
      .optional()
      .describe('Hold an export whose row count fell by more than this share (0–1) from the last processed export. Default: off.'),
    values: z
      .array(valueRuleSchema)
      .refine((rules) => new Set(rules.map((r) => r.field)).size === rules.length, 'each field may have one rule only')
      .default(() => DEFAULT_VALUE_RULES.map((r) => ({ ...r })))
      .describe(
        'Guards on field values (issue 14). Default: one rule for every field (*): hold when more than 25% of the records that had a value are set to zero or empty, or of those that had a non-zero number jump by more than ×10 or ÷10 (below 20 such records: when all of them, 3 or more, do). [] turns them off; a rule naming a field replaces * for it.',
      ),
    allow_empty: z
      .boolean()
      .default(false)
      .describe('Explicit opt-in: publish a result of zero records without a person (sends allow_empty, A13). Default false.'),
    allow_mass_delete: z
      .boolean()
      .default(false)
      .describe(
        'Explicit opt-in: let max_delete_ratio and max_deletes pass and send allow_mass_delete when more than half would go (A5). Default false.',
      ),
  })
  .describe('Guards that hold a change for a person (dataset-connector approve | discard).');

/** Per-record requests vs one replace job. */
export const replacePolicySchema = z
  .strictObject({
    prefer_import: z
      .boolean()
      .default(true)
      .describe('When a replace is chosen and the source file can be mapped by the server (A14), upload it (POST /imports) instead of PUT /records. Default true.'),
    estimated_job_ms: z
      .int()
      .min(0)
      .default(10_000)
      .describe('Expected duration of a replace or import job until one has been measured for this dataset, in milliseconds. Default 10000.'),
    job_poll_ms: z
      .int()
      .min(100)
      .default(1_000)
      .describe('Interval of job status polls, in milliseconds; each poll is one request under the rate limit. Default 1000.'),
    max_per_record_changes: z
      .int()
      .min(0)
      .optional()
      .describe('Use a replace whenever more than this many per-record requests would be needed, whatever the time estimate. Default: no cap.'),
  })
  .describe('How the connector chooses between per-record requests and one replace job.');

/** A dataset's sync policy. */
export const policySchema = z
  .strictObject({
    staging: z
      .boolean()
      .default(true)
      .describe(
        'Stage every change as a draft, check its counts against the plan, then publish. Default true. With false, changes within the guards are published directly, except the first one of each key, staged to learn whether the key stages (a legacy key does not, A12).',
      ),
    direct_publish_max_changes: z
      .int()
      .min(0)
      .default(0)
      .describe(
        'Publish per-record changes directly (no draft) when there are at most this many and no guard holds; the first change of each key is staged, to learn whether the key stages. Default 0 (off).',
      ),
    guards: guardsSchema.default(() => guardsSchema.parse({})),
    ownership: z
      .enum(['source', 'full'])
      .default('source')
      .describe(
        'source: the connector changes and deletes only records whose record_id came from this source; others are left alone and carried over by a replace. full: the export is the whole truth, anything else is deleted under the guards. Default source.',
      ),
    on_foreign_edit: z
      .enum(['overwrite', 'keep'])
      .default('overwrite')
      .describe('When someone else edited a record the connector owns: overwrite with the source on its next change, or keep the fields edited on the server. Default overwrite.'),
    on_foreign_draft: z
      .enum(['wait', 'discard'])
      .default('wait')
      .describe('A pending draft the connector did not make: wait for a person (reported), or discard it. Default wait.'),
    replace: replacePolicySchema.default(() => replacePolicySchema.parse({})),
    unchanged_rows: z
      .boolean()
      .default(true)
      .describe(
        'Keep a copy of the last published export\'s rows (state dir, about the size of the export) and take a row equal to the one at its place as its record, unmapped and undiffed: a sync reads a large export with few changes about twice as fast. Only for a dataset of one source without feeds; anything uncertain reads the whole export. The sync summary says which read was taken (read: unchanged-rows | full, with why). Default true; false reads every export in full and keeps no copy.',
      ),
  })
  .describe('Staging, guards, ownership and the per-record vs replace choice of one dataset.');

/** A parsed policy, defaults applied. */
export type Policy = z.output<typeof policySchema>;
export type GuardsPolicy = z.output<typeof guardsSchema>;
export type OwnershipMode = Policy['ownership'];

/** The policy with every default. */
export function defaultPolicy(): Policy {
  return policySchema.parse({});
}
