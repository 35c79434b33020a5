import { z } from 'zod';
import { demoConfigSchema } from './demo.js';
import { apiConfigSchema, type ApiConfig } from './api.js';
import { LOG_LEVELS } from './defaults.js';
import type { ConfigIssue } from './errors.js';
import { historyConfigSchema } from './history.js';
import { feedsConfigSchema, precedenceConfigSchema } from './feeds.js';
import { primaryFeed } from './feed-fields.js';
import { exportsConfigSchema, resolveExports } from './exports.js';
import type { MappingConfig } from '../mapping/config.js';
import {
  alertsConfigSchema,
  mappingConfigSchema,
  policySchema,
  schedulesConfigSchema,
  sourceConfigSchema,
  watchConfigSchema,
} from './pieces.js';

/** Names of datasets as keys under `datasets:` (also used in logs, metrics and the state db). */
export const DATASET_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

export { LOG_LEVELS };

/** Logging options. */
export const logConfigSchema = z
  .strictObject({
    level: z.enum(LOG_LEVELS).default('info').describe('Lowest level written.'),
    format: z.enum(['json', 'pretty']).default('json').describe('json (one line per event, for journald) or pretty (for people).'),
  })
  .meta({ id: 'LogConfig' })
  .describe('Logging; --log-level and --log-format override it.');

/** Optional HTTP listener for /healthz and /metrics. */
export const healthConfigSchema = z
  .strictObject({
    listen: z
      .string()
      .regex(/^(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):\d{1,5}$/, 'expected host:port such as 127.0.0.1:9464')
      .default('127.0.0.1:9464')
      .describe('Address of the /healthz and /metrics listener; keep it on 127.0.0.1.'),
  })
  .meta({ id: 'HealthConfig' })
  .describe('Health and metrics listener; absent means off.');

/** One dataset: where it lives, which exports feed it, how changes are sent. */
export const datasetConfigSchema = z
  .strictObject({
    api: apiConfigSchema,
    feeds: feedsConfigSchema,
    precedence: precedenceConfigSchema,
    coalesce_ms: z
      .number()
      .int()
      .min(0)
      .max(600_000)
      .default(3_000)
      .describe(
        "When a feed's file is ready while the dataset's other feed folders are still receiving files (seen, not yet settled or flagged), " +
          'the daemon waits for them this long at most, so that exports written together make one plan; later arrivals never extend it. 0: no wait',
      ),
    // The single-source form: normalise.ts moves these into feeds.main; written beside feeds they are an error.
    source: sourceConfigSchema.optional().describe('Shorthand for feeds: { main: { role: full, source: … } } (with mapping, watch, schedules).'),
    mapping: mappingConfigSchema.optional().describe('Shorthand: the mapping of the one full feed main.'),
    watch: watchConfigSchema.optional().describe('Shorthand: the watched folder of the one full feed main.'),
    schedules: schedulesConfigSchema.unwrap().optional().describe('Shorthand: the schedules of the one full feed main.'),
    policy: policySchema.default(() => policySchema.parse({})),
    history: historyConfigSchema.default(() => historyConfigSchema.parse({})),
  })
  .superRefine((ds, ctx) => {
    for (const k of ['source', 'mapping', 'watch', 'schedules'] as const) {
      if (ds[k] !== undefined) ctx.addIssue({ code: 'custom', path: [k], message: `${k} is written beside feeds: expected it inside the feed it belongs to (feeds: { <name>: { ${k}: … } })` });
    }
  })
  .transform(({ source: _s, mapping: _m, watch: _w, schedules: _sc, ...ds }) => {
    // The dataset's own source, mapping, watch and schedules are its primary feed's (its full feed), so that
    // what reads one export (preview, the daemon's watcher) works unchanged; `feed` names that feed.
    const feed = primaryFeed(ds.feeds);
    const f = ds.feeds[feed]!;
    return { ...ds, feed, source: f.source, mapping: f.mapping as MappingConfig, watch: f.watch, schedules: f.schedules };
  })
  .meta({ id: 'DatasetConfig' })
  .describe('One dataset kept in step with one or more exports (feeds).');

/** The whole configuration, after the normalise step. */
export const configSchema = z
  .strictObject({
    $schema: z.string().optional().describe('Path or URL of connector.schema.json, for editors.'),
    state_dir: z
      .string()
      .min(1)
      .default('/var/lib/dataset-connector')
      .describe('Directory of the state database (StateDirectory= under systemd). A relative path is taken from the folder of the YAML file that sets it.'),
    timezone: z
      .string()
      .min(1)
      .default('UTC')
      .describe('IANA time zone for schedules and for timestamps in file names, e.g. Asia/Tokyo.'),
    log: logConfigSchema.default({ level: 'info', format: 'json' }),
    health: healthConfigSchema.optional(),
    alerts: alertsConfigSchema.optional(),
    demo: demoConfigSchema.optional(),
    exports: exportsConfigSchema,
    datasets: z
      .record(
        z.string().regex(DATASET_NAME, 'expected a dataset name of lowercase letters, digits, - and _ (at most 64)'),
        datasetConfigSchema,
      )
      .default({})
      .describe('Datasets by name; conf.d/*.yaml files may add more.'),
  })
  .superRefine((c, ctx) => {
    for (const [name, ds] of Object.entries(c.datasets)) {
      for (const [feed, f] of Object.entries(ds.feeds)) {
        if (f.from === undefined || f.from in c.exports) continue;
        const known = Object.keys(c.exports);
        ctx.addIssue({
          code: 'custom',
          path: ['datasets', name, 'feeds', feed, 'from'],
          message: `no export "${f.from}" under exports: (${known.length > 0 ? `the exports are ${known.join(', ')}` : 'there is none'}); name one, or add it to exports: in the main configuration file`,
        });
      }
    }
  })
  // Each feed with from reads its export's file as written there, with its rows as a row filter (exports.ts).
  .transform((c) => resolveExports(c))
  .describe('dataset-connector configuration (connector.yaml and conf.d/*.yaml).');

type ParsedDataset = z.output<typeof datasetConfigSchema>;
type ParsedConfig = z.output<typeof configSchema>;

/** One dataset's configuration as the rest of the program sees it. */
export type DatasetConfig = Omit<ParsedDataset, 'api'> & {
  /** The key under `datasets:`. */
  name: string;
  /** The file that defined this dataset. */
  file: string;
  api: ApiConfig & { dataset_id: string };
};

/** The loaded configuration. */
export type Config = Omit<ParsedConfig, 'datasets' | '$schema'> & {
  datasets: Record<string, DatasetConfig>;
  /** Every file read, main file first. */
  files: string[];
  /** What works but a person should know (a listener reachable from other machines); `validate` prints them, `run` logs them. */
  warnings: ConfigIssue[];
};
