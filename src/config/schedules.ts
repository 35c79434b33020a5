import { z } from 'zod';
import { validate as validateCron, validateDetailed } from 'node-cron';

/** The daemon's environment variables an export command inherits; anything else it needs goes in `env`. */
export const COMMAND_BASE_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR'] as const;

/** What each cron field accepts, in the words of node-cron's field names. */
const CRON_FIELDS: Record<string, string> = {
  second: 'second 0-59',
  minute: 'minute 0-59',
  hour: 'hour 0-23',
  dayOfMonth: 'day of month 1-31',
  month: 'month 1-12 or jan-dec',
  dayOfWeek: 'day of week 0-7 (0 and 7 are Sunday) or sun-sat',
};

/** Why a cron expression is refused, naming the field and what it takes; null when node-cron accepts it. */
export function cronProblem(expression: string): string | null {
  if (validateCron(expression)) return null;
  const bad = validateDetailed(expression).errors[0];
  const range = bad && CRON_FIELDS[bad.field];
  if (bad && range) {
    const name = range.slice(0, range.search(/ [0-9]/));
    return `the ${name} field "${bad.value}" is not valid (expected ${range}: a value, a range a-b, a list a,b or a step */n)`;
  }
  const fields = expression.trim().split(/\s+/).length;
  return `expected 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, got ${fields}, e.g. "0 3 * * *" for 03:00 every day`;
}

const cronExpression = z
  .string()
  .min(1)
  .superRefine((c, ctx) => {
    const problem = cronProblem(c);
    if (problem !== null) ctx.addIssue({ code: 'custom', message: problem });
  })
  .describe('When to run, as a cron expression (5 fields, or 6 with seconds first)');

const scheduleBase = {
  name: z.string().min(1).optional().describe('Name used in logs; defaults to the type and position'),
  cron: cronExpression,
  timezone: z
    .string()
    .min(1)
    .optional()
    .describe('IANA time zone of the cron expression; defaults to the top-level timezone'),
};

/** Re-read a file at a fixed path, for systems that overwrite in place without file events. */
const rereadSchedule = z.strictObject({
  type: z.literal('reread'),
  ...scheduleBase,
  path: z.string().min(1).describe('The export file to read; it is left in place; a relative path is taken from the folder of the YAML file that sets it'),
});

/** Run an export command and sync what it produced. */
const commandSchedule = z.strictObject({
  type: z.literal('command'),
  ...scheduleBase,
  command: z
    .array(z.string())
    .min(1)
    .describe(
      'Program and its arguments, run without a shell, e.g. ["/opt/pos/bin/export", "--format", "csv"]. A program written with a slash ' +
        '("./bin/export") is taken from cwd when set, else from the folder of the YAML file; a bare name is looked up in PATH; arguments are passed as written',
    ),
  cwd: z
    .string()
    .min(1)
    .optional()
    .describe("Working folder of the command (default: the daemon's); a relative path is taken from the folder of the YAML file that sets it"),
  output_file: z
    .string()
    .min(1)
    .optional()
    .describe(
      'File the command writes its export to; when absent, the export is read from its standard output. ' +
        'A relative path is taken from cwd when set, else from the folder of the YAML file',
    ),
  env: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'), z.string())
    .default({})
    .describe(
      `Environment variables of the command. It gets only these plus ${COMMAND_BASE_ENV.join(', ')} from the daemon, ` +
        'never the rest of its environment (which may hold dataset keys)',
    ),
  timeout_ms: z.number().int().min(1).default(300_000).describe('The command is killed after this long'),
  max_stderr_bytes: z.number().int().min(0).default(8192).describe('How much of the standard error is kept for the log'),
});

/** Read the published records from the server and repair drift in the snapshot. */
const reconcileSchedule = z.strictObject({
  type: z.literal('reconcile'),
  ...scheduleBase,
});

/** Warn about held or staged drafts before the server expires them (24 hours). */
const draftCheckSchedule = z.strictObject({
  type: z.literal('draft_check'),
  ...scheduleBase,
  warn_before_ms: z
    .number()
    .int()
    .min(0)
    .default(4 * 3_600_000)
    .describe('Warn when a held or staged draft is this close to its 24-hour expiry'),
});

/** One schedule of a dataset; `type` selects what it does. */
export const scheduleConfigSchema = z.discriminatedUnion('type', [
  rereadSchedule,
  commandSchedule,
  reconcileSchedule,
  draftCheckSchedule,
]);

/** The schedules of a dataset. */
export const schedulesConfigSchema = z
  .array(scheduleConfigSchema)
  .default([])
  .describe('Scheduled work of this dataset: reread, command, reconcile, draft_check');

export type ScheduleConfig = z.infer<typeof scheduleConfigSchema>;
export type SchedulesConfig = z.infer<typeof schedulesConfigSchema>;
