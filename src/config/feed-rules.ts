import { resolve } from 'node:path';
import type { ConfigRule, RuleIssue } from './rule-types.js';
import { mappersOf } from './feed-fields.js';
import { takersOf } from './exports.js';

/** A dataset has at most one full feed: two would each delete what the other lists. */
export const oneFullFeed: ConfigRule = (c) =>
  Object.entries(c.datasets).flatMap(([name, ds]) => {
    const full = Object.entries(ds.feeds).filter(([, f]) => f.role === 'full').map(([n]) => n);
    return full.slice(1).map((feed): RuleIssue => ({
      path: ['datasets', name, 'feeds', feed, 'role'],
      message: `feed "${feed}" is a second full feed (feed "${full[0]}" is one): expected at most one full feed per dataset; make this one role: update`,
    }));
  });

/**
 * Each field is owned by one feed (issue 13): two feeds mapping it need a
 * precedence saying which wins; a precedence names a feed that maps it, or newest.
 */
export const oneOwnerPerField: ConfigRule = (c) =>
  Object.entries(c.datasets).flatMap(([name, ds]) => {
    const issues: RuleIssue[] = [];
    const mappers = mappersOf(ds.feeds);
    for (const [field, feeds] of mappers) {
      if (feeds.length < 2 || ds.precedence[field] !== undefined) continue;
      issues.push({
        path: ['datasets', name, 'feeds', feeds[1]!, 'mapping', 'fields', field],
        message: `${field} is mapped by feeds ${feeds.map((f) => `"${f}"`).join(' and ')}: say which wins with precedence: { ${field}: ${feeds.join(' | ')} | newest } beside feeds, or map it in one feed only`,
      });
    }
    for (const [field, winner] of Object.entries(ds.precedence)) {
      const feeds = mappers.get(field) ?? [];
      if (winner !== 'newest' && !feeds.includes(winner)) {
        issues.push({ path: ['datasets', name, 'precedence', field], message: `"${winner}" does not map ${field} (expected newest or one of the feeds mapping it: ${feeds.join(', ') || 'none'})` });
      }
    }
    return issues;
  });

/** Every watched folder in the configuration: who watches it and the setting that says so. */
export function watchesOf(c: Parameters<ConfigRule>[0]): { who: string; path: (string | number)[]; dir: string }[] {
  return [
    ...Object.entries(c.exports).flatMap(([name, e]) => (e.watch ? [{ who: `export "${name}"`, path: ['exports', name, 'watch', 'path'], dir: e.watch.path }] : [])),
    ...Object.entries(c.datasets).flatMap(([name, ds]) =>
      Object.entries(ds.feeds).flatMap(([feed, f]) => (f.watch ? [{ who: `dataset "${name}" feed "${feed}"`, path: ['datasets', name, 'feeds', feed, 'watch', 'path'], dir: f.watch.path }] : [])),
    ),
  ];
}

/**
 * Watches whose folders are one folder by `key` (the resolved path; the real path when checked on this machine),
 * each after the first reported with the first one's setting in `see`.
 */
export function sameFolderIssues(watches: ReturnType<typeof watchesOf>, key: (dir: string) => string): RuleIssue[] {
  const seen = new Map<string, ReturnType<typeof watchesOf>[number]>();
  const issues: RuleIssue[] = [];
  for (const w of watches) {
    const k = key(w.dir);
    const first = seen.get(k);
    if (first === undefined) seen.set(k, w);
    else
      issues.push({
        path: w.path,
        see: first.path,
        message:
          `${w.dir} is watched by ${first.who} too (${SEE}${first.dir === w.dir ? '' : `, written ${first.dir}; both are ${k}`}): expected one watcher per folder (two would race for each file, the first moving it away). ` +
          'For one file feeding several datasets, write the folder once under exports: { <name>: { watch: …, source: … } } and give each feed from: <name> (with rows: to take its rows)',
      });
  }
  return issues;
}

/** Where a RuleIssue's message names the setting in its `see` (file:line and option path, filled in by the loader). */
export const SEE = '{see}';

/**
 * One watcher per folder: two would race for each file (the first moves it away). A folder that feeds several
 * datasets is one export under exports:, which the datasets take with from (one watcher, the file kept until
 * every taker is done with it). Paths are compared resolved (a trailing / or ./ is the same folder); the
 * local check (validate) also compares real paths, so a symlink to a watched folder is caught.
 */
export const oneWatcherPerFolder: ConfigRule = (c) => sameFolderIssues(watchesOf(c), (dir) => resolve(dir));

/** An export no feed takes would be watched (its files moved away) for nobody. */
export const exportTaken: ConfigRule = (c) =>
  Object.keys(c.exports).flatMap((name): RuleIssue[] =>
    takersOf(c.datasets, name).length > 0
      ? []
      : [{ path: ['exports', name], message: `no feed takes export "${name}" (from: ${name}): its folder and schedules would serve nobody; add from: ${name} to a dataset's feed, or remove the export` }],
  );

/** The feed rules, run with the other cross-field rules (config/rules.ts). */
export const feedRules: readonly ConfigRule[] = [oneFullFeed, oneOwnerPerField, oneWatcherPerFolder, exportTaken];
