import type { DatasetConfig } from '../config/schema.js';
import { MAIN_FEED } from '../config/feeds.js';
import { ConnectorError } from '../errors.js';

/** A dataset written without a `feeds:` block: its one full feed is the implicit `main`. */
export function withoutFeeds(ds: DatasetConfig): boolean {
  const names = Object.keys(ds.feeds ?? {});
  return names.length === 1 && names[0] === MAIN_FEED && ds.feeds[MAIN_FEED]?.role === 'full';
}

/** `--feed` given for a dataset without feeds: a usage error naming the command that does it for the dataset. */
export function refuseFeedOption(ds: DatasetConfig, command: string): void {
  if (!withoutFeeds(ds)) return;
  throw new ConnectorError('BAD_ARGUMENTS', `${ds.name} has no feeds; use \`dataset-connector ${command} ${ds.name}\``, { action: 'reject', context: { dataset: ds.name } });
}
