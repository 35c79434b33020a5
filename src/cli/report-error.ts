import { ConfigError, formatIssue } from '../config/errors.js';
import { ConnectorError } from '../errors.js';
import { registeredSecrets } from '../log/secret-registry.js';
import { scrubLine } from '../log/scrub.js';
import { exitCodeFor, type ExitCodeValue } from './exit-codes.js';

const NEXT_STEP: Record<string, string> = {
  retry: 'this may be temporary; the connector will try again, or run the command again later',
  hold: 'held for a person: see `dataset-connector status`, then `approve` or `discard`',
  reject: 'the input was rejected; nothing from it was published',
  stop: 'fix the cause above, then run the command again',
};

/**
 * Print an error for a person (to stderr by default) and return the exit code.
 * Config errors list every issue as file:line: option: message.
 */
export function reportError(err: unknown, out: { write(s: string): unknown } = process.stderr): ExitCodeValue {
  const write = (s: string) => out.write(`${scrubLine(s, registeredSecrets())}\n`);
  if (err instanceof ConfigError) {
    write(`error: ${err.issues.length === 1 ? 'the configuration has 1 problem' : `the configuration has ${err.issues.length} problems`}:`);
    for (const issue of err.issues) write(`  ${formatIssue(issue)}`);
  } else if (err instanceof ConnectorError) {
    const ctx = [err.context.dataset && `dataset ${err.context.dataset}`, err.context.file && `file ${err.context.file}`]
      .filter(Boolean)
      .join(', ');
    write(`error [${err.code}]${ctx ? ` (${ctx})` : ''}: ${err.message}`);
    write(`  ${NEXT_STEP[err.action] ?? ''}`);
  } else {
    const e = err instanceof Error ? err : new Error(String(err));
    write(`internal error: ${e.message}`);
    if (process.env.DATASET_CONNECTOR_DEBUG) write(e.stack ?? '');
  }
  return exitCodeFor(err);
}
