import { ConnectorError } from '../errors.js';

/** One problem in the configuration, located in the file that holds it. */
export interface ConfigIssue {
  /** The YAML file the option sits in (absolute or as given). */
  file: string;
  /** 1-based line in that file, or null when the option is missing entirely. */
  line: number | null;
  /** The option path, e.g. `datasets.shop-1.api.rate_per_minute` ('' for the whole file). */
  path: string;
  /** What is wrong and what is expected. */
  message: string;
}

/** Format one issue as `file:line: path: message` (the form `validate` prints). */
export function formatIssue(issue: ConfigIssue): string {
  const where = issue.line === null ? issue.file : `${issue.file}:${issue.line}`;
  return issue.path === '' ? `${where}: ${issue.message}` : `${where}: ${issue.path}: ${issue.message}`;
}

/** The configuration cannot be used; `issues` lists every problem found. */
export class ConfigError extends ConnectorError {
  readonly issues: readonly ConfigIssue[];

  constructor(issues: ConfigIssue[], options: { cause?: unknown } = {}) {
    const head = issues.length === 1 ? 'configuration has 1 problem' : `configuration has ${issues.length} problems`;
    super('CONFIG_INVALID', `${head}:\n${issues.map((i) => `  ${formatIssue(i)}`).join('\n')}`, {
      action: 'stop',
      cause: options.cause,
      context: { file: issues[0]?.file },
    });
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

/** A dataset named on the command line is not in the configuration (a usage error: exit 2). */
export function unknownDataset(name: string, known: readonly string[]): ConnectorError {
  return new ConnectorError('UNKNOWN_DATASET', `no dataset "${name}" in the configuration (known: ${known.join(', ') || 'none'})`, {
    action: 'reject',
    context: { dataset: name },
  });
}
