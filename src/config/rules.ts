export type { ConfigRule, RuleIssue } from './rule-types.js';
import type { ConfigRule, RuleIssue } from './rule-types.js';
import { feedRules } from './feed-rules.js';

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

const atLeastOneDataset: ConfigRule = (c) =>
  Object.keys(c.datasets).length > 0
    ? []
    : [{ path: ['datasets'], message: 'no dataset is defined: add one under datasets: here or in a conf.d/*.yaml file' }];

const knownTimezone: ConfigRule = (c) => {
  try {
    new Intl.DateTimeFormat('en', { timeZone: c.timezone });
    return [];
  } catch {
    return [{ path: ['timezone'], message: `unknown time zone "${c.timezone}": expected an IANA name such as Asia/Tokyo or UTC` }];
  }
};

/** The key travels in a header: plain http is only for the local emulator. */
const httpsUnlessLoopback: ConfigRule = (c) =>
  Object.entries(c.datasets).flatMap(([name, ds]) => {
    const url = new URL(ds.api.base_url);
    if (url.protocol === 'https:' || LOOPBACK.has(url.hostname)) return [];
    return [{ path: ['datasets', name, 'api', 'base_url'], message: 'expected an https:// URL: http:// would send the key in clear (allowed only for localhost)' }];
  });

const baseUrlWithoutApiPath: ConfigRule = (c) =>
  Object.entries(c.datasets).flatMap(([name, ds]) =>
    new URL(ds.api.base_url).pathname.includes('/api/v1/')
      ? [{ path: ['datasets', name, 'api', 'base_url'], message: 'expected the service base only (e.g. https://api.example.com): the connector adds /api/v1/business-datasets/<id> itself' }]
      : [],
  );

/** Two entries writing the same remote dataset would undo each other's work. */
const oneEntryPerRemoteDataset: ConfigRule = (c) => {
  const seen = new Map<string, string>();
  const issues: RuleIssue[] = [];
  for (const [name, ds] of Object.entries(c.datasets)) {
    const target = `${new URL(ds.api.base_url).origin}#${ds.api.dataset_id ?? name}`;
    const first = seen.get(target);
    if (first === undefined) seen.set(target, name);
    else issues.push({ path: ['datasets', name, 'api', 'dataset_id'], message: `dataset "${name}" targets the same remote dataset as "${first}": expected one entry per dataset` });
  }
  return issues;
};

const validPort: ConfigRule = (c) => {
  const port = Number(c.health?.listen.split(':').pop());
  return c.health === undefined || (port >= 1 && port <= 65535)
    ? []
    : [{ path: ['health', 'listen'], message: 'expected a port between 1 and 65535' }];
};

/** An address only this machine reaches: localhost, 127.0.0.0/8 or ::1. */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.has(host) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/** /healthz and /metrics have no authentication: reachable from the shop's network, they tell anyone the datasets, counts and errors. */
const healthListenUnauthenticated: ConfigRule = (c) => {
  if (c.health === undefined) return [];
  const host = c.health.listen.slice(0, c.health.listen.lastIndexOf(':'));
  if (isLoopbackHost(host)) return [];
  return [
    {
      path: ['health', 'listen'],
      message:
        `${c.health.listen} can be reached from other machines, and /healthz and /metrics answer anyone without authentication ` +
        '(expected 127.0.0.1:<port>; keep another address only behind a firewall or an authenticating proxy)',
    },
  ];
};

/** Every cross-field rule, run after the schema accepted the configuration. */
export const configRules: readonly ConfigRule[] = [
  atLeastOneDataset,
  knownTimezone,
  httpsUnlessLoopback,
  baseUrlWithoutApiPath,
  oneEntryPerRemoteDataset,
  validPort,
  ...feedRules,
];

/** Rules whose findings are warnings: the configuration works, but a person should know. */
export const configWarningRules: readonly ConfigRule[] = [healthListenUnauthenticated];

/** Run every rule. */
export function checkRules(config: Parameters<ConfigRule>[0], rules: readonly ConfigRule[] = configRules): RuleIssue[] {
  return rules.flatMap((rule) => rule(config));
}
