import { createRequire } from 'node:module';
import pino, { type DestinationStream, type Logger } from 'pino';
import type PinoPretty from 'pino-pretty';
import type { Secret } from '../secret.js';
import { zonedParts } from '../zoned-time.js';
import { scrubLine } from './scrub.js';
import { registeredSecrets } from './secret-registry.js';

export type { Logger } from 'pino';

const require = createRequire(import.meta.url);

/** pino-pretty, loaded on first use: JSON logging (the service) and CLI start-up never pay for it. */
function pinoPretty(opts: PinoPretty.PrettyOptions): DestinationStream {
  return (require('pino-pretty') as typeof PinoPretty)(opts);
}

export type LogLevel = 'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent';
export type LogFormat = 'json' | 'pretty';

/** Options of createLogger. */
export interface CreateLoggerOptions {
  level?: LogLevel;
  /** json: one line per event on stdout, for journald; pretty: for people. */
  format?: LogFormat;
  /** Secrets to scrub besides those registered with registerSecret (the array is read on every line). */
  secrets?: Iterable<Secret>;
  /** Where lines go (default stdout); tests pass a stream to capture them. */
  destination?: DestinationStream | NodeJS.WritableStream;
  /** Colours in pretty output (default: when the destination is a TTY). */
  colorize?: boolean;
  /** IANA zone of pretty timestamps (the configured `timezone`); default the system's. JSON lines stay UTC ISO. */
  timezone?: string;
}

/** `YYYY-MM-DD HH:mm:ss.SSS +09:00`: `ms` in the IANA zone `timeZone` (pretty log lines). */
export function zonedTimestamp(ms: number, timeZone: string): string {
  const t = zonedParts(ms, timeZone);
  return `${t.year}-${t.month}-${t.day} ${t.hour}:${t.minute}:${t.second}.${t.millisecond} ${t.offset}`;
}

/** Field paths that carry credentials; censored before serialization. */
export const REDACT_PATHS = [
  'authorization',
  'Authorization',
  'headers.authorization',
  'headers.Authorization',
  '*.headers.authorization',
  '*.headers.Authorization',
  '*.authorization',
  '*.Authorization',
  'secret',
  '*.secret',
  'password',
  '*.password',
  'token',
  '*.token',
  'api_key',
  '*.api_key',
  'apiKey',
  '*.apiKey',
];

/**
 * The connector's logger: pino with credential paths redacted and, as a
 * final safety net, every registered secret value scrubbed from each line
 * as it is written (whatever field or message it ended up in).
 */
export function createLogger(opts: CreateLoggerOptions = {}): Logger {
  const format = opts.format ?? 'json';
  const extra = opts.secrets ?? [];
  const scrub = (line: string): string => scrubLine(scrubLine(line, registeredSecrets()), extra);
  const dest = opts.destination ?? pino.destination({ dest: 1, sync: true });
  const stream: DestinationStream =
    format === 'pretty'
      ? pinoPretty({
          destination: dest,
          sync: true,
          colorize: opts.colorize ?? Boolean((dest as { isTTY?: boolean }).isTTY ?? process.stdout.isTTY),
          ...(opts.timezone
            ? { translateTime: false, customPrettifiers: { time: (t: string | object) => `[${zonedTimestamp(Number(t), opts.timezone!)}]` } }
            : { translateTime: 'SYS:standard' }),
          ignore: 'pid,hostname',
        })
      : (dest as DestinationStream);
  return pino(
    {
      level: opts.level ?? 'info',
      base: { pid: process.pid },
      timestamp: format === 'json' ? pino.stdTimeFunctions.isoTime : pino.stdTimeFunctions.epochTime,
      formatters: { level: (label) => ({ level: label }) },
      redact: { paths: REDACT_PATHS, censor: '[redacted]' },
      hooks: { streamWrite: scrub },
    },
    stream,
  );
}

/** A logger that writes nothing (for library callers and tests that do not look at logs). */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
