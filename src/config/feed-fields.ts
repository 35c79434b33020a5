import type { FeedConfig } from './feeds.js';

/** The fields a feed sets: every field it maps but record_id (which finds the record). */
export function fieldsOf(feed: Pick<FeedConfig, 'mapping'>): string[] {
  return Object.keys(feed.mapping.fields).filter((f) => f !== 'record_id');
}

/** The feeds mapping each field, in the order the feeds are written. */
export function mappersOf(feeds: Readonly<Record<string, Pick<FeedConfig, 'mapping'>>>): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [name, feed] of Object.entries(feeds)) {
    for (const field of fieldsOf(feed)) {
      const list = out.get(field);
      if (list) list.push(name);
      else out.set(field, [name]);
    }
  }
  return out;
}

/** The feed that reads a dataset's plain `source`/`mapping`: its full feed, else its first. */
export function primaryFeed(feeds: Readonly<Record<string, Pick<FeedConfig, 'role'>>>): string {
  const names = Object.keys(feeds);
  return names.find((n) => feeds[n]!.role === 'full') ?? names[0]!;
}
