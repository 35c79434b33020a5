import type { Command } from 'commander';
import type { LoadOptions } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { ConnectorError } from '../errors.js';
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

/**
 * Run a command's work on one dataset; an error it throws that does not name
 * a dataset (an API refusal, a network failure) is reported naming this one.
 */
export async function onDataset<T>(dataset: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ConnectorError && err.context.dataset === undefined) err.context.dataset = dataset;
    throw err;
  }
}

/** Where a command's words go: a terminal on stdout means a person reads them. */
export interface OutputStreams {
  stdout: { isTTY?: boolean; write(s: string): unknown };
  stderr: { isTTY?: boolean; write(s: string): unknown };
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
}

/** The process's own streams. */
export function processStreams(): OutputStreams {
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin };
}

/** A short summary for a person on a terminal; JSON when stdout is piped or with --json. */
export function humanOutput(opts: { json?: boolean }, io: OutputStreams = processStreams()): boolean {
  return !opts.json && io.stdout.isTTY === true;
}

/**
 * The logger of a command whose output is for a person: unless --log-format or
 * --log-level asks for log lines, they feed a progress line and its warnings
 * on the terminal's stderr (TerminalProgress) instead of the screen filling
 * with JSON. Otherwise the usual logger, to `destination`.
 */
export async function commandLogger(
  cmd: Command,
  config: Pick<Config, 'log' | 'timezone'>,
  human: boolean,
  io: OutputStreams = processStreams(),
  destination?: NodeJS.WritableStream,
): Promise<{ logger: Logger; progress: { clear(): void } | null }> {
  const g = globalOptions(cmd);
  if (!human || g.logFormat !== undefined || g.logLevel !== undefined) return { logger: loggerFor(cmd, config, destination), progress: null };
  const { TerminalProgress } = await import('./progress.js');
  const progress = new TerminalProgress(io.stderr);
  return { logger: createLogger({ format: 'json', level: 'debug', destination: progress }), progress };
}
