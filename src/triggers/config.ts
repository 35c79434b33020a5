import { z } from 'zod';
import { validate as validateCron, validateDetailed } from 'node-cron';
import { compileMarker } from './marker.js';

/**
 * Names never read as exports, whatever `ignore` says: dot-files, Office lock
 * files, partial writes, and the reject files a read writes beside an export.
 */
export const BUILTIN_IGNORE = ['.*', '~$*', '*.tmp', '*.part', '*.rejected.csv'] as const;

/** The daemon's environment variables an export command inherits; anything else it needs goes in `env`. */
export const COMMAND_BASE_ENV = ['PATH', 'HOME', 'LANG', 'LC_ALL', 'LC_CTYPE', 'TZ', 'TMPDIR'] as const;

const fileNamePattern = z
  .string()
  .min(1)
  .refine((p) => !p.includes('/') && !p.includes('\\'), 'a file-name pattern, without folders (e.g. "*.csv")');

const markerTemplate = z
  .string()
  .min(1)
  .refine((m) => !m.includes('/') && !m.includes('\\'), 'a file name, without folders')
  .refine((m) => {
    try {
      compileMarker(m);
      return true;
    } catch {
      return false;
    }
  }, 'a name with a fixed part; only {name} and {stem} are placeholders');

/** A watched export folder: which files count, when they are complete, and what happens to them after. */
export const watchConfigSchema = z
  .strictObject({
    path: z.string().min(1).describe('Folder the POS or ERP writes its exports into (sub-folders are not watched); a relative path is taken from the folder of the YAML file that sets it'),
    include: z
      .array(fileNamePattern)
      .default([])
      .describe('File-name patterns that count as exports, e.g. ["*.csv"]; empty means every file not ignored'),
    ignore: z
      .array(fileNamePattern)
      .default([])
      .describe(`Extra file-name patterns never read, added to the built-in ones (${BUILTIN_IGNORE.join(', ')})`),
    settle_ms: z
      .number()
      .int()
      .min(0)
      .default(2000)
      .describe('A file is complete once its size and modification time have not changed for this long'),
    poll_interval_ms: z
      .number()
      .int()
      .min(10)
      .default(1000)
      .describe('How often the folder is scanned in polling mode, and how often a missing marker is looked for'),
    polling: z
      .boolean()
      .default(false)
      .describe('Poll the folder instead of relying on file-system events (needed on SMB and NFS mounts)'),
    follow_symlinks: z
      .boolean()
      .default(false)
      .describe(
        'false: a symbolic link in the folder is never opened (it is logged once and left alone), nor is a FIFO, socket or device; ' +
          'true: a link is read when its real path lies inside this folder (sub-folders included) or its processed_dir or failed_dir. ' +
          'After processing the link itself is moved or deleted, never the file it points to',
      ),
    marker: markerTemplate
      .optional()
      .describe(
        'Marker file that must exist before a file counts as ready: "{name}.done" (name of the export plus ".done"), ' +
          '"{stem}.ok" (name without extension), or a fixed name such as "READY" (one flag for the folder)',
      ),
    after: z
      .enum(['move', 'delete', 'leave'])
      .default('move')
      .describe('What to do with a file once processed: move it to processed_dir or failed_dir, delete it, or leave it'),
    processed_dir: z
      .string()
      .min(1)
      .default('processed')
      .describe('Where processed and superseded files are moved (relative to path); names keep the original plus a timestamp'),
    failed_dir: z
      .string()
      .min(1)
      .default('failed')
      .describe('Where rejected files are moved (relative to path), with their reject file beside them'),
    retention_days: z
      .number()
      .min(0)
      .default(30)
      .describe(
        'Archived files (and reject files) in processed_dir and failed_dir modified longer ago than this many days are deleted; 0 keeps them forever',
      ),
  })
  .describe('Watched export folder of this dataset');

export type WatchConfig = z.infer<typeof watchConfigSchema>;

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
