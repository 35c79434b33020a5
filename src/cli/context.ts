import type { Command } from 'commander';
import type { LoadOptions } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { reportError } from './report-error.js';
import { createLogger, type LogFormat, type Logger, type LogLevel } from '../log/logger.js';

/** The options every command inherits from the program. */
export interface GlobalOptions {
  /** Path of connector.yaml (conf.d/ beside it is read too). */
  config: string;
  logFormat?: LogFormat;
  logLevel?: LogLevel;
}

/** The global options as seen from inside a command's action. */
export function globalOptions(cmd: Command): GlobalOptions {
  return cmd.optsWithGlobals<GlobalOptions>();
}

/** Load the configuration named by --config (the loader and the schema load with it, not at start-up). */
export async function loadConfigFor(cmd: Command, opts: LoadOptions = {}): Promise<Config> {
  const { loadConfig } = await import('../config/load.js');
  return loadConfig(globalOptions(cmd).config, opts);
}

/** A logger honouring --log-format/--log-level, else the config's log section, else json/info; to stdout unless `destination` says otherwise. */
export function loggerFor(cmd: Command, config?: Pick<Config, 'log' | 'timezone'>, destination?: NodeJS.WritableStream): Logger {
  const g = globalOptions(cmd);
  return createLogger({
    format: g.logFormat ?? config?.log.format ?? 'json',
    level: g.logLevel ?? config?.log.level ?? 'info',
    ...(config?.timezone ? { timezone: config.timezone } : {}),
    ...(destination ? { destination } : {}),
  });
}

/**
 * Wrap a command's action: its returned number (default 0) becomes the exit
 * code; a thrown error is reported for a person and mapped to an exit code.
 */
export function runAction<A extends unknown[]>(fn: (...args: A) => Promise<number | void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      process.exitCode = (await fn(...args)) ?? 0;
    } catch (err) {
      process.exitCode = reportError(err);
    }
  };
}
