import { z } from 'zod';
import { columnRefSchema, type ColumnRef, type MappingConfig } from '../mapping/config.js';
import { sourceConfigSchema, type SourceConfig } from '../sources/config.js';
import { watchConfigSchema, type WatchConfig } from './watch.js';
import { schedulesConfigSchema, type SchedulesConfig } from './schedules.js';

/** Names of shared exports as keys under `exports:` (logs, the state db). */
export const EXPORT_NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** The schedules an export may have: those that produce a file (a reconcile or draft check is a dataset's). */
const FILE_SCHEDULES = ['reread', 'command'] as const;

/**
 * One export several datasets take (issue 13's fan-out): a chain's head-office
 * ERP writes one file for every store. Its trigger and how it is read are
 * written once here; each taking feed says `from: <name>`, which rows it takes
 * (`rows`) and its own mapping.
 */
export const exportConfigSchema = z
  .strictObject({
    source: sourceConfigSchema.describe('How the file is read (as a feed\'s source); every feed taking it reads it so.'),
    watch: watchConfigSchema.optional().describe('The folder the export is written to; one watcher serves every dataset taking it, and after (move, delete) applies once all of them are done with a file.'),
    schedules: schedulesConfigSchema.describe('reread or command schedules producing the export; each file goes to every dataset taking it.'),
  })
  .superRefine((e, ctx) => {
    e.schedules.forEach((s, i) => {
      if (!(FILE_SCHEDULES as readonly string[]).includes(s.type)) {
        ctx.addIssue({ code: 'custom', path: ['schedules', i, 'type'], message: `a ${s.type} schedule is a dataset's: put it in the schedules of each dataset that needs it (an export takes reread or command)` });
      }
    });
    if (!e.watch && e.schedules.length === 0) ctx.addIssue({ code: 'custom', path: ['watch'], message: 'an export needs a watch folder or a reread or command schedule: nothing would ever produce its file' });
  })
  .meta({ id: 'ExportConfig' })
  .describe('A shared export: its folder or schedules and how it is read, written once for every dataset taking it.');

export type ExportConfig = z.output<typeof exportConfigSchema>;

/** The shared exports by name. */
export const exportsConfigSchema = z
  .record(z.string().regex(EXPORT_NAME, 'expected an export name of lowercase letters, digits, - and _ (at most 64)'), exportConfigSchema)
  .default({})
  .describe('Exports several datasets take (a chain: one file for every store). A feed takes one with from: <name>, choosing its rows (rows) and columns (its mapping).');

/** The rows of a shared export a feed takes. */
export const rowsConfigSchema = z
  .strictObject({
    column: columnRefSchema.describe('The column that says whose row it is, e.g. Store.'),
    equals: z
      .union([z.string(), z.array(z.string()).min(1)], {
        error: (iss) => (iss.code === 'invalid_union' ? 'expected the value as text in quotes (e.g. "001", so that YAML keeps the zeros), or a list of them' : undefined),
      })
      .describe('The value (or any of the values) of that column in the rows taken, compared as written (spaces around the cell aside); quote it: "001".'),
  })
  .describe('Take only the rows whose column equals the value (or one of the values); the other rows are counted as filtered, not as errors. A missing column refuses the file for this dataset.');

export type RowsConfig = z.output<typeof rowsConfigSchema>;

/** Pure: the row filter (mapping.filters.keep_when_match) that takes exactly the rows `rows` names. */
export function rowsFilter(rows: RowsConfig): { column: ColumnRef; pattern: string } {
  const values = (Array.isArray(rows.equals) ? rows.equals : [rows.equals]).map((v) => v.trim().replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&'));
  return { column: rows.column, pattern: `^\\s*(?:${values.join('|')})\\s*$` };
}

/** Where a feed's `rows` comes from, for the messages about it. */
export interface RowsOrigin {
  dataset: string;
  feed: string;
  export: string;
}

/**
 * The mapping of a feed with its `rows` as one more row filter (the reader
 * then never makes records of other rows); a message about that filter's
 * column names feeds.<feed>.rows.column, not the filter it is read as.
 */
export function withRows<M extends Pick<MappingConfig, 'filters' | 'made'>>(mapping: M, rows: RowsConfig | undefined, origin: RowsOrigin): M {
  if (!rows) return mapping;
  const setting = `feeds.${origin.feed}.rows.column`;
  const column = typeof rows.column === 'string' ? `"${rows.column}"` : JSON.stringify(rows.column);
  const made = {
    setting,
    what: `the column that picks the rows dataset ${origin.dataset} takes from export ${origin.export}`,
    fix: `This file of export ${origin.export} is refused for dataset ${origin.dataset} only: fix ${setting} of dataset ${origin.dataset} to name the column of the export that says whose row it is, or have the export write a ${column} column`,
    rows: { setting: `feeds.${origin.feed}.rows`, says: `${typeof rows.column === 'string' ? rows.column : column} equals ${(Array.isArray(rows.equals) ? rows.equals : [rows.equals]).map((v) => JSON.stringify(v)).join(' or ')}`, dataset: origin.dataset },
  };
  const keep = mapping.filters.keep_when_match;
  return {
    ...mapping,
    filters: { ...mapping.filters, keep_when_match: [...keep, rowsFilter(rows)] },
    made: { ...mapping.made, keep: [...Array.from(keep, (_, i) => mapping.made?.keep?.[i]), made] },
  };
}

/** What a feed taking a shared export says (the feed schema's fields). */
interface Taking {
  from?: string | undefined;
  rows?: RowsConfig | undefined;
  source?: SourceConfig | undefined;
  mapping: Pick<MappingConfig, 'filters' | 'made'>;
  watch?: WatchConfig | undefined;
  schedules: SchedulesConfig;
}

/**
 * Pure: every feed with `from` gets its export's source and its `rows` as a
 * row filter of its mapping, so that each command (preview, plan, sync, the
 * daemon) reads the file exactly as the export's takers do. A dataset's own
 * source and mapping (its primary feed's) follow. `from` naming no export is
 * left as it is (the schema refuses it before this runs).
 */
export function resolveExports<
  F extends Taking,
  D extends { feeds: Record<string, F>; feed: string; source?: unknown; mapping?: unknown },
  C extends { exports: Record<string, ExportConfig>; datasets: Record<string, D> },
>(config: C): C {
  const datasets: Record<string, D> = {};
  for (const [name, ds] of Object.entries(config.datasets)) {
    const feeds: Record<string, F> = {};
    for (const [feed, f] of Object.entries(ds.feeds)) {
      const exp = f.from === undefined ? undefined : config.exports[f.from];
      feeds[feed] = { ...f, ...(exp ? { source: exp.source } : {}), mapping: withRows(f.mapping, f.rows, { dataset: name, feed, export: f.from ?? '' }) };
    }
    const primary = feeds[ds.feed]!;
    datasets[name] = { ...ds, feeds, source: primary.source, mapping: primary.mapping };
  }
  return { ...config, datasets };
}

/** The feeds taking export `name`, in the order they are written (dataset by dataset). */
export function takersOf(datasets: Readonly<Record<string, { feeds: Readonly<Record<string, { from?: string | undefined }>> }>>, name: string): Array<{ dataset: string; feed: string }> {
  return Object.entries(datasets).flatMap(([dataset, ds]) => Object.entries(ds.feeds).filter(([, f]) => f.from === name).map(([feed]) => ({ dataset, feed })));
}
