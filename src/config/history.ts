import { z } from 'zod';

/** How much history a dataset keeps (issue 14): by age, by count of versions, and by size. */
export const historyConfigSchema = z
  .strictObject({
    retention_days: z
      .number()
      .min(0)
      .default(30)
      .describe('Keep what was published in the last this many days (why and restore reach back as far). 0: no limit by age. Default 30.'),
    retention_versions: z
      .int()
      .min(0)
      .default(0)
      .describe('Keep at most this many published versions. 0: no limit by count. Default 0.'),
    max_bytes: z
      .int()
      .min(1_048_576)
      .default(512 * 1_048_576)
      .describe('Keep the history of this dataset below this many bytes in the state database: the oldest versions go first. Default 536870912 (512 MiB).'),
  })
  .describe('The history of what the connector published (why, restore): retention by days, versions and size, pruned by the daemon.');

export type HistoryConfig = z.output<typeof historyConfigSchema>;
