import type { DatasetConfig } from '../config/schema.js';
import { fieldsOf } from '../config/feed-fields.js';
import { ConnectorError } from '../errors.js';
import type { MappingConfig } from '../mapping/config.js';
import type { FeedRole } from '../config/feeds.js';
import { COMMAND_KEY, changeRowCheck, commandColumnName } from './merge-changes.js';

/**
 * The dataset as one of its feeds reads a file (issue 13): the feed's source,
 * mapping, watch and schedules as the dataset's own, and its value guards in
 * the policy when it sets them. `feed` absent: the dataset as configured (its
 * primary feed). An unknown name is a stop naming the feeds there are.
 */
export function feedView(ds: DatasetConfig, feed?: string): DatasetConfig {
  if (feed === undefined || feed === ds.feed) return ds;
  const f = ds.feeds[feed];
  if (!f) {
    throw new ConnectorError('UNKNOWN_FEED', `dataset ${ds.name} has no feed "${feed}" (its feeds: ${Object.keys(ds.feeds).join(', ')})`, {
      action: 'stop',
      context: { dataset: ds.name, setting: 'feed' },
    });
  }
  const values = f.guards?.values;
  return {
    ...ds,
    feed,
    source: f.source,
    mapping: f.mapping as MappingConfig,
    watch: f.watch,
    schedules: f.schedules,
    ...(values ? { policy: { ...ds.policy, guards: { ...ds.policy.guards, values } } } : {}),
  };
}

/** The role of the feed a dataset view reads with (the single-source form: full). */
export function roleOf(ds: DatasetConfig): FeedRole {
  return ds.feeds?.[ds.feed]?.role ?? 'full';
}

/** Whether the dataset has more than its one full feed: only then does a sync merge (feed state, overlay). */
export function hasFeeds(ds: DatasetConfig): boolean {
  return Object.keys(ds.feeds ?? {}).length > 1 || roleOf(ds) !== 'full';
}

/** The fields each feed but `except` maps, for the full feed's overlay. */
export function otherFeedFields(ds: DatasetConfig, except: string): Map<string, Set<string>> {
  return new Map(Object.entries(ds.feeds).filter(([n]) => n !== except).map(([n, f]) => [n, new Set(fieldsOf(f))]));
}

/**
 * The mapping the row reader runs for an update feed: its own, with fixed placeholders for the fields a record must have (only the feed's fields are taken from it).
 * `exists`: whether the dataset has a record, so a change list's upsert that would create one is checked as it is read (changeRowCheck).
 */
export function readerMapping(ds: DatasetConfig, exists?: (recordId: string) => boolean): MappingConfig {
  const role = roleOf(ds);
  if (role === 'full') return ds.mapping;
  const fill = { const: '-', separator: '-', transforms: [], empty_is_null: false };
  const fields: MappingConfig['fields'] = { display_name: fill, api_value: fill, ...ds.mapping.fields };
  const commands = ds.feeds[ds.feed]?.commands;
  // An empty cell of a feed is no value (its field is left as it is), also display_name's: only a create needs it.
  const mapped = Object.keys(ds.mapping.fields);
  // A change list's command word rides along as an attribute the merge takes out (merge-changes.ts).
  if (!(role === 'changes' && commands)) return { ...ds.mapping, fields, blanksAreNoValue: true };
  const key = `attributes.${COMMAND_KEY}`;
  fields[key] = { ...(typeof commands.column === 'string' ? { column: commands.column } : commands.column), separator: '-', transforms: [], empty_is_null: false };
  const setting = `feeds.${ds.feed}.commands.column`;
  const command = {
    setting,
    what: `the command column of change list ${ds.feed} of dataset ${ds.name}`,
    fix: `Each row of a change list needs its command (create, upsert, update, delete, ignore): name the column that holds it in ${setting}${ds.file ? ` (${ds.file})` : ''}, or have the export write a "${commandColumnName(commands)}" column`,
  };
  const rowCheck = changeRowCheck({ commands, column: commandColumnName(commands), fields: mapped, ...(exists ? { exists } : {}) });
  return { ...ds.mapping, fields, blanksAreNoValue: true, rowCheck, made: { ...ds.mapping.made, fields: { ...ds.mapping.made?.fields, [key]: command } } };
}
