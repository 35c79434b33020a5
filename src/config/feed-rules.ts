import type { ConfigRule, RuleIssue } from './rule-types.js';
import { mappersOf } from './feed-fields.js';

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

/** One watcher per folder: two would race for each file (the first moves it away). */
export const oneWatcherPerFolder: ConfigRule = (c) => {
  const seen = new Map<string, string>();
  const issues: RuleIssue[] = [];
  for (const [name, ds] of Object.entries(c.datasets)) {
    for (const [feed, f] of Object.entries(ds.feeds)) {
      if (!f.watch) continue;
      const who = `dataset "${name}" feed "${feed}"`;
      const first = seen.get(f.watch.path);
      if (first === undefined) seen.set(f.watch.path, who);
      else
        issues.push({
          path: ['datasets', name, 'feeds', feed, 'watch', 'path'],
          message: `${f.watch.path} is watched by ${first} too: expected one watcher per folder (two would race for each file); give each feed its own folder`,
        });
    }
  }
  return issues;
};

/**
 * A missing-record strategy that changes records (set, deactivate) beside a full feed is refused for now: the
 * feed state keeps only the values of rows a file listed, so the next catalogue sync would bring back the
 * values the strategy replaced (and show hidden records again), and the stock file would flip them back.
 */
export const missingBesideFullFeed: ConfigRule = (c) =>
  Object.entries(c.datasets).flatMap(([name, ds]) => {
    const full = Object.entries(ds.feeds).find(([, f]) => f.role === 'full')?.[0];
    if (full === undefined) return [];
    return Object.entries(ds.feeds).flatMap(([feed, f]): RuleIssue[] => {
      const strategy = f.role === 'update' ? f.missing?.strategy : undefined;
      if (strategy !== 'set' && strategy !== 'deactivate') return [];
      return [
        {
          path: ['datasets', name, 'feeds', feed, 'missing', 'strategy'],
          message: `strategy ${strategy} beside the full feed "${full}" is not supported yet: a sync of "${full}" would bring back the values it replaced; use strategy: leave (records the file does not list keep their values)`,
        },
      ];
    });
  });

/**
 * Precedence is applied when a full feed's export is merged; an update or change list's file always sets the
 * fields it maps. So a field such a feed maps may name that feed as the winner, never another feed or newest.
 */
export const precedenceHonoured: ConfigRule = (c) =>
  Object.entries(c.datasets).flatMap(([name, ds]) => {
    const issues: RuleIssue[] = [];
    for (const [field, feeds] of mappersOf(ds.feeds)) {
      const winner = ds.precedence[field];
      if (feeds.length < 2 || winner === undefined || (winner !== 'newest' && !feeds.includes(winner))) continue;
      const setters = feeds.filter((f) => ds.feeds[f]!.role !== 'full');
      if (setters.length === 0 || (setters.length === 1 && winner === setters[0])) continue;
      issues.push({
        path: ['datasets', name, 'precedence', field],
        message:
          setters.length === 1
            ? `${field}: ${winner} is not applied yet when feed "${setters[0]}" (${ds.feeds[setters[0]!]!.role}) syncs: its files always set ${field}; name it as the winner (${field}: ${setters[0]}) or map ${field} in one feed only`
            : `${field} is set by feeds ${setters.map((f) => `"${f}"`).join(' and ')}, whose files always set it: map ${field} in one of them only`,
      });
    }
    return issues;
  });

/** The feed rules, run with the other cross-field rules (config/rules.ts). */
export const feedRules: readonly ConfigRule[] = [oneFullFeed, oneOwnerPerField, precedenceHonoured, oneWatcherPerFolder, missingBesideFullFeed];
