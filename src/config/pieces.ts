/**
 * The parts of a dataset's configuration that other areas own. Each area
 * exports its zod schema; this file is the one place that composes them.
 */
export { sourceConfigSchema } from '../sources/config.js';
export { mappingConfigSchema } from '../mapping/config.js';
export { policySchema } from './policy.js';
export { watchConfigSchema } from './watch.js';
export { schedulesConfigSchema } from './schedules.js';
export { alertsConfigSchema } from './alerts.js';
