import type { z } from 'zod';
import type { configSchema } from './schema.js';

type Parsed = z.output<typeof configSchema>;

/** A problem found by a rule: the option path and what is expected. */
export interface RuleIssue {
  path: (string | number)[];
  message: string;
  /** Another setting the message names (at SEE in it): the loader writes its file:line and option path there. */
  see?: (string | number)[];
}

/** A cross-field check over the parsed configuration; pure. */
export type ConfigRule = (config: Parsed) => RuleIssue[];
