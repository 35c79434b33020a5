import { constants } from 'node:fs';
import { access, readFile, readdir, realpath, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { LineCounter, isMap, parseDocument } from 'yaml';
import type { z } from 'zod';
import { DEFAULT_CONFIG_PATH } from './defaults.js';
import { ConfigError, type ConfigIssue } from './errors.js';
import { isSingleFeed, normaliseConfig } from './normalise.js';
import { MAIN_FEED } from './feeds.js';
import { lineOf, type SourceFile } from './positions.js';
import { localIssues } from './local-checks.js';
import { checkRules, configWarningRules, type RuleIssue } from './rules.js';
import { SEE } from './feed-rules.js';
import { yamlIssues } from './yaml-errors.js';
import { configSchema, type Config, type DatasetConfig } from './schema.js';
import { allowedKeysAt } from './zod-walk.js';

export { DEFAULT_CONFIG_PATH };

/**
 * True only when nothing is at `path` (ENOENT). A config that is there but
 * cannot be read (EACCES on its folder, ENOTDIR) is not absent: loading it
 * fails and says why, so what it sets (e.g. a call allow-list) is never
 * skipped in silence.
 */
export async function configAbsent(path: string): Promise<boolean> {
  return stat(path).then(
    () => false,
    (err: NodeJS.ErrnoException) => err.code === 'ENOENT',
  );
}

/** What loadConfig checks beyond the files themselves. */
export interface LoadOptions {
  /** Also check this machine: key files there, readable and private, and that watch folders exist (`validate`; localIssues). */
  local?: boolean;
}

/**
 * Read `path` and every `*.yaml` in `conf.d/` beside it (in name order),
 * merge their datasets, expand shorthands, check the schema and the rules.
 * The only part of the configuration code that touches the disk. Throws a
 * ConfigError listing every problem with file, line and option path.
 */
export async function loadConfig(path: string = DEFAULT_CONFIG_PATH, opts: LoadOptions = {}): Promise<Config> {
  const mainPath = resolve(path);
  const issues: ConfigIssue[] = [];
  const main = await readSource(mainPath, issues);
  const extras: SourceFile[] = [];
  for (const file of await confDFiles(mainPath, issues)) {
    const src = await readSource(file, issues);
    if (src) extras.push(src);
  }
  if (!main || issues.length > 0) throw new ConfigError(issues);

  const { raw, origin } = merge(main, extras, issues);
  if (issues.length > 0) throw new ConfigError(issues);

  const fileFor = (p: readonly PropertyKey[]): SourceFile =>
    (p[0] === 'datasets' && typeof p[1] === 'string' && origin.get(p[1])) || main;
  // A dataset written in the single-source form: its options are reported where they were written, not under feeds.main.
  const single = new Set(Object.entries(isPlainObject(raw.datasets) ? raw.datasets : {}).filter(([, ds]) => isSingleFeed(ds)).map(([n]) => n));
  const written = (p: readonly PropertyKey[]): PropertyKey[] =>
    p[0] === 'datasets' && single.has(String(p[1])) && p[2] === 'feeds' && p[3] === MAIN_FEED ? ['datasets', p[1]!, ...p.slice(4)] : [...p];

  // Relative paths are taken from the folder of the file that wrote them, not the process's working folder.
  const bases = { mainDir: dirname(main.file), datasetDir: (name: string) => dirname((origin.get(name) ?? main).file) };
  const parsed = configSchema.safeParse(normaliseConfig(raw, bases), { error: friendlyMessage });
  if (!parsed.success) throw new ConfigError(sorted(parsed.error.issues.flatMap((i) => zodIssueToConfigIssues(i, fileFor, written))));

  // A rule's issue at its setting; another setting it names (see) written as file:line and option path.
  const place = (r: RuleIssue): ConfigIssue => {
    const see = r.see && `${fileFor(r.see).file}:${lineOf(fileFor(r.see), written(r.see)) ?? '?'} ${written(r.see).map(String).join('.')}`;
    return locate(fileFor(r.path), written(r.path), see ? r.message.replace(SEE, see) : r.message);
  };
  const ruleIssues = checkRules(parsed.data);
  if (opts.local && ruleIssues.length === 0) ruleIssues.push(...(await localIssues(parsed.data, { stat, realpath, readable: (p) => access(p, constants.R_OK), env: process.env })));
  if (ruleIssues.length > 0) {
    throw new ConfigError(sorted(ruleIssues.map(place)));
  }

  const { $schema: _ignored, ...rest } = parsed.data;
  const datasets: Record<string, DatasetConfig> = {};
  for (const [name, ds] of Object.entries(parsed.data.datasets)) {
    datasets[name] = { ...ds, name, file: fileFor(['datasets', name]).file, api: { ...ds.api, dataset_id: ds.api.dataset_id ?? name } };
  }
  const warnings = sorted(checkRules(parsed.data, configWarningRules).map(place));
  return { ...rest, datasets, files: [main.file, ...extras.map((e) => e.file)], warnings };
}

/** `conf.d/*.yaml` beside the main file, sorted; none when the folder is absent. */
async function confDFiles(mainPath: string, issues: ConfigIssue[]): Promise<string[]> {
  const dir = join(dirname(mainPath), 'conf.d');
  try {
    const names = await readdir(dir);
    return names.filter((n) => n.endsWith('.yaml') && !n.startsWith('.')).sort().map((n) => join(dir, n));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    issues.push({ file: dir, line: null, path: '', message: `cannot read the conf.d folder: ${(err as Error).message}` });
    return [];
  }
}

async function readSource(file: string, issues: ConfigIssue[]): Promise<SourceFile | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'file not found' : code === 'EACCES' ? 'permission denied' : (err as Error).message;
    issues.push({ file, line: null, path: '', message: `cannot read the configuration: ${why}` });
    return null;
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  issues.push(...yamlIssues(file, doc));
  if (doc.errors.length > 0) return null;
  if (doc.contents !== null && !isMap(doc.contents)) {
    issues.push({ file, line: lineOf({ file, doc, lineCounter }, []), path: '', message: 'expected a mapping of options (key: value) at the top of the file' });
    return null;
  }
  return { file, doc, lineCounter };
}

/** Main file's options plus every conf.d file's datasets; a dataset defined twice is an error naming both files. */
function merge(main: SourceFile, extras: SourceFile[], issues: ConfigIssue[]) {
  const raw = (main.doc.toJS() ?? {}) as Record<string, unknown>;
  const datasets: Record<string, unknown> = isPlainObject(raw.datasets) ? { ...raw.datasets } : {};
  const origin = new Map<string, SourceFile>();
  for (const name of Object.keys(datasets)) origin.set(name, main);

  for (const src of extras) {
    const data = (src.doc.toJS() ?? {}) as Record<string, unknown>;
    for (const key of Object.keys(data)) {
      if (key !== 'datasets') {
        issues.push(locate(src, [key], `only datasets: may appear in a conf.d file; move "${key}" to ${basename(main.file)}`, true));
      }
    }
    if (data.datasets === undefined || data.datasets === null) continue;
    if (!isPlainObject(data.datasets)) {
      issues.push(locate(src, ['datasets'], 'expected a mapping of dataset names to datasets'));
      continue;
    }
    for (const [name, ds] of Object.entries(data.datasets)) {
      const first = origin.get(name);
      if (first) {
        issues.push(
          locate(src, ['datasets', name], `dataset "${name}" is defined twice: in ${first.file}:${lineOf(first, ['datasets', name], true)} and in ${src.file}:${lineOf(src, ['datasets', name], true)}`, true),
        );
        continue;
      }
      origin.set(name, src);
      datasets[name] = ds;
    }
  }
  // A main-file `datasets:` that is not a mapping is left for the schema to report.
  if (raw.datasets === undefined || raw.datasets === null || isPlainObject(raw.datasets)) raw.datasets = datasets;
  return { raw, origin };
}

/** In reading order: by file, then line. */
function sorted(issues: ConfigIssue[]): ConfigIssue[] {
  return [...issues].sort((a, b) => a.file.localeCompare(b.file) || (a.line ?? 0) - (b.line ?? 0));
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function locate(src: SourceFile, path: readonly PropertyKey[], message: string, keyOfLast = false): ConfigIssue {
  return { file: src.file, line: lineOf(src, path, keyOfLast), path: path.map(String).join('.'), message };
}

function zodIssueToConfigIssues(
  issue: z.core.$ZodIssue,
  fileFor: (p: readonly PropertyKey[]) => SourceFile,
  written: (p: readonly PropertyKey[]) => PropertyKey[],
): ConfigIssue[] {
  const src = fileFor(issue.path);
  const at = written(issue.path);
  if (issue.code === 'unrecognized_keys') {
    const allowed = allowedKeysAt(configSchema, issue.path.filter((p) => typeof p !== 'symbol'));
    const hint = allowed.length > 0 ? ` (expected one of: ${allowed.join(', ')})` : '';
    return issue.keys.map((k) => locate(src, [...at, k], `unknown option "${k}"${hint}`, true));
  }
  // A bad record key (dataset name): the key's own check says what is expected.
  const message = issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
  return [locate(src, at, message, issue.code === 'invalid_key')];
}

/** Error messages that say what is expected, in the words of the YAML file. */
function friendlyMessage(iss: z.core.$ZodRawIssue): string | undefined {
  if (iss.code === 'invalid_type' && iss.input === undefined) return `missing required option: expected ${iss.expected}`;
  if (iss.code === 'invalid_type') return `expected ${iss.expected}, got ${describe(iss.input)}`;
  return undefined;
}

function describe(v: unknown): string {
  if (v === null) return 'null (an empty value)';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'string') return `the text "${v.length > 40 ? `${v.slice(0, 40)}…` : v}"`;
  return `${typeof v} ${String(v)}`;
}

/** The conf.d folder used for a given main configuration file. */
export function confDirFor(path: string): string {
  return join(dirname(resolve(path)), 'conf.d');
}
