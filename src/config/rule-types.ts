import type { z } from 'zod';
import type { configSchema } from './schema.js';

type Parsed = z.output<typeof configSchema>;

/** A problem found by a rule: the option path and what is expected. */
export interface RuleIssue {
  path: (string | number)[];
  message: string;
}

/** A cross-field check over the parsed configuration; pure. */
export type ConfigRule = (config: Parsed) => RuleIssue[];
