/**
 * Constants the CLI needs before any configuration is read. Kept free of
 * imports so that `--help` does not load the schema (zod, every area's options).
 */

/** Where the service looks when no --config is given. */
export const DEFAULT_CONFIG_PATH = '/etc/dataset-connector/connector.yaml';

/** Log levels, most verbose first (pino's names). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
