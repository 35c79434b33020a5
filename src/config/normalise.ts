import { isAbsolute, resolve } from 'node:path';
import { KEY_SHORTHAND } from './key-source.js';
import { LOG_LEVELS } from './defaults.js';
import { MAIN_FEED } from './feeds.js';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Folders that relative paths are resolved against: the folder of the YAML file that wrote them. */
export interface PathBases {
  /** Folder of the main file (connector.yaml): top-level options. */
  mainDir: string;
  /** Folder of the file that defined a dataset (connector.yaml or a conf.d file). */
  datasetDir(name: string): string;
}

/**
 * Expand the shorthands people write into the one shape the schema checks
 * (house style 3: schema, normalise, rules). Pure; returns a new object and
 * leaves anything it does not recognise for the schema to report.
 *
 * - `log: debug`                → `log: {level: debug}`
 * - `health: true`              → `health: {}`;  `health: "127.0.0.1:9464"` → `{listen: …}`
 * - `key: "env:SHOP1_KEY"`      → `key: {env: SHOP1_KEY}` (also `file:…`, `credential:…`)
 * - a dataset without `feeds:`  → its source, mapping, watch and schedules become
 *   `feeds: {main: {role: full, …}}` (issue 13: the single-source form is one full feed)
 * - with `bases`, every relative path option becomes absolute against the
 *   folder of the YAML file that wrote it (a service's working folder is
 *   rarely the one the person had in mind): state_dir,
 *   demo.sample_export_dir, watch.path, a reread schedule's path, a command
 *   schedule's cwd, output_file (against cwd when given), a program
 *   written with a slash (`./bin/export`, against cwd when given) and a key
 *   file (a dataset's api.key.file, alerts.call.key.file).
 */
export function normaliseConfig(raw: unknown, bases?: PathBases): unknown {
  if (!isObj(raw)) return raw;
  const out: Obj = { ...raw };
  if (bases) {
    if (out.state_dir !== undefined) out.state_dir = absolute(out.state_dir, bases.mainDir);
    if (isObj(out.demo)) out.demo = defined({ ...out.demo, sample_export_dir: absolute(out.demo.sample_export_dir, bases.mainDir) });
    if (isObj(out.alerts) && isObj(out.alerts.call)) out.alerts = { ...out.alerts, call: keyPaths(out.alerts.call, bases.mainDir) };
  }
  if (typeof out.log === 'string' && (LOG_LEVELS as readonly string[]).includes(out.log)) out.log = { level: out.log };
  if (out.health === true) out.health = {};
  else if (out.health === false) delete out.health;
  else if (typeof out.health === 'string') out.health = { listen: out.health };
  if (isObj(out.datasets)) {
    const datasets: Obj = {};
    for (const [name, ds] of Object.entries(out.datasets)) {
      datasets[name] = bases ? datasetPaths(normaliseDataset(ds), bases.datasetDir(name)) : normaliseDataset(ds);
    }
    out.datasets = datasets;
  }
  return out;
}

/** One dataset's shorthands expanded (the single-source form, a key source written as text). */
export function normaliseDataset(ds: unknown): unknown {
  if (!isObj(ds)) return ds;
  const out = singleFeed(ds);
  if (!isObj(out.api)) return out;
  const api: Obj = { ...out.api };
  if (typeof api.key === 'string') {
    const m = KEY_SHORTHAND.exec(api.key);
    if (m) api.key = { [m[1] as string]: m[2] };
  }
  return { ...out, api };
}

/** The options of the single-source form, which are one full feed's. */
export const SINGLE_FEED_KEYS = ['source', 'mapping', 'watch', 'schedules'] as const;

/** A dataset written without feeds: its source, mapping, watch and schedules as the full feed `main`. */
function singleFeed(ds: Obj): Obj {
  if (ds.feeds !== undefined) return ds;
  const out: Obj = { ...ds };
  const feed: Obj = { role: 'full' };
  for (const k of SINGLE_FEED_KEYS) {
    if (k in out) feed[k] = out[k];
    delete out[k];
  }
  out.feeds = { [MAIN_FEED]: feed };
  return out;
}

/** Whether a dataset as written uses the single-source form (its options' paths are then under feeds.main after normalise). */
export function isSingleFeed(ds: unknown): boolean {
  return isObj(ds) && ds.feeds === undefined;
}

/** `value` made absolute against `base` when it is a relative path; anything else (absent, empty, not text) is left for the schema. */
function absolute(value: unknown, base: string): unknown {
  return typeof value === 'string' && value !== '' && !isAbsolute(value) ? resolve(base, value) : value;
}

/** Drop keys whose value is undefined, so an absent option stays absent. */
function defined(o: Obj): Obj {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/** A dataset's path options made absolute against `base` (the folder of its file). */
function datasetPaths(ds: unknown, base: string): unknown {
  if (!isObj(ds)) return ds;
  const out: Obj = feedPaths(ds, base);
  if (isObj(out.api)) out.api = keyPaths(out.api, base);
  if (isObj(out.feeds)) out.feeds = Object.fromEntries(Object.entries(out.feeds).map(([name, f]) => [name, isObj(f) ? feedPaths(f, base) : f]));
  return out;
}

/** An object holding `key: {file: …}` (a dataset's api, alerts.call) with the key file made absolute against `base`. */
function keyPaths(o: Obj, base: string): Obj {
  return isObj(o.key) ? { ...o, key: defined({ ...o.key, file: absolute(o.key.file, base) }) } : o;
}

/** A feed's (or a dataset's) watch folder and schedule paths made absolute against `base`. */
function feedPaths(f: Obj, base: string): Obj {
  const out: Obj = { ...f };
  // processed_dir and failed_dir stay relative: they are relative to watch.path, which is now absolute.
  if (isObj(out.watch)) out.watch = defined({ ...out.watch, path: absolute(out.watch.path, base) });
  if (Array.isArray(out.schedules)) out.schedules = out.schedules.map((s) => schedulePaths(s, base));
  return out;
}

function schedulePaths(s: unknown, base: string): unknown {
  if (!isObj(s)) return s;
  if (s.type === 'reread') return defined({ ...s, path: absolute(s.path, base) });
  if (s.type !== 'command') return s;
  const cwd = absolute(s.cwd, base);
  // Relative to the command's folder, as the command itself would see them; else to the YAML's folder.
  const from = typeof cwd === 'string' && isAbsolute(cwd) ? cwd : base;
  const command = Array.isArray(s.command)
    ? s.command.map((arg, i) => (i === 0 && typeof arg === 'string' && arg.includes('/') ? absolute(arg, from) : arg))
    : s.command;
  return defined({ ...s, cwd, output_file: absolute(s.output_file, from), command });
}

/** JSON Schema of the shorthands above, merged into the generated schema so editors accept them too. */
export const SHORTHAND_JSON_SCHEMAS: Record<string, object> = {
  KeySource: { type: 'string', pattern: KEY_SHORTHAND.source, description: 'Shorthand: "env:NAME", "file:/path" or "credential:NAME".' },
  HealthConfig: { type: ['boolean', 'string'], description: 'Shorthand: true for the default address, or "host:port".' },
  LogConfig: { type: 'string', enum: [...LOG_LEVELS], description: 'Shorthand for {level: …}.' },
};
