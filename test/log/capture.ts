import { Writable } from 'node:stream';
import pino from 'pino';

/** A JSON log line as the tests read it. */
export type CapturedLine = Record<string, unknown>;

/**
 * A pino logger at `level` that writes into memory: `lines()` parses what it
 * wrote so far, `raw()` is the text itself (for "no key anywhere" checks).
 * The daemon tests have their own in test/daemon/service-harness.ts, whose
 * `lines` is an array they poll while the service runs.
 */
export function capture(level: pino.LevelWithSilent = 'debug'): { logger: pino.Logger; lines: () => CapturedLine[]; raw: () => string } {
  let raw = '';
  const stream = new Writable({
    write(chunk, _enc, cb) {
      raw += String(chunk);
      cb();
    },
  });
  return { logger: pino({ level }, stream), raw: () => raw, lines: () => raw.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as CapturedLine) };
}
