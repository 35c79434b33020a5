/**
 * The parts of a dataset's configuration that other areas own. Each area
 * exports its zod schema; this file is the one place that composes them.
 * Until an area's schema lands, a placeholder keeps the shape (loose, so
 * nothing is rejected that the real schema would accept).
 */
import { z } from 'zod';

const placeholder = (owner: string) => z.looseObject({}).describe(`Defined by ${owner}.`);

export { sourceConfigSchema } from '../sources/config.js';
export { mappingConfigSchema } from '../mapping/config.js';
export { policySchema } from '../sync/policy.js';
export { watchConfigSchema, schedulesConfigSchema } from '../triggers/config.js';
/** Alerts by phone call (src/daemon/alerts.ts). */
export const alertsConfigSchema = placeholder('src/daemon/alerts.ts');
