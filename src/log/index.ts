/** Logging: createLogger, the closed list of events, the secret registry. */
export { createLogger, silentLogger, REDACT_PATHS, type CreateLoggerOptions, type LogFormat, type LogLevel, type Logger } from './logger.js';
export { LOG_EVENTS, event, type LogEvent } from './events.js';
export { registerSecret, registeredSecrets } from './secret-registry.js';
export { scrubLine } from './scrub.js';
