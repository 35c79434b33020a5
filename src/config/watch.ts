import { z } from 'zod';
import { compileMarker } from './marker.js';

/**
 * Names never read as exports, whatever `ignore` says: dot-files, Office lock
 * files, partial writes, and the reject files a read writes beside an export.
 */
export const BUILTIN_IGNORE = ['.*', '~$*', '*.tmp', '*.part', '*.rejected.csv'] as const;

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
