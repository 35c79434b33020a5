/** Configuration: loading, validation, key resolution, JSON Schema. */
export { loadConfig, confDirFor, DEFAULT_CONFIG_PATH } from './load.js';
export { ConfigError, formatIssue, type ConfigIssue } from './errors.js';
export { configSchema, datasetConfigSchema, DATASET_NAME, LOG_LEVELS, type Config, type DatasetConfig } from './schema.js';
export { apiConfigSchema, type ApiConfig } from './api.js';
export { keySourceSchema, type KeySource } from './key-source.js';
export { resolveKey, resolveKeyDetailed, type ResolvedKey } from './key.js';
export { clientOptionsFor } from './client-options.js';
export { configJsonSchema, configJsonSchemaText } from './json-schema.js';
