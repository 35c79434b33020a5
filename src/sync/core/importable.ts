import type { FieldSpec, MappingConfig } from '../../mapping/config.js';
import type { SourceConfig } from '../../sources/config.js';

/**
 * Can the server map the export file itself (POST /imports, A14) into exactly
 * the records our own reader and mapping made of it? Only then may a replace
 * go as an upload of the file instead of PUT /records with the records. Pure:
 * the caller gathers the facts (source-read.ts).
 */

/** A14: the CSV encodings the upload accepts. */
export const UPLOAD_ENCODINGS = ['utf-8', 'shift_jis', 'cp932', 'euc-jp', 'euc-kr'] as const;

/** What the decision looks at: the configs, and what the read found in the file. */
export interface ImportFacts {
  source: SourceConfig;
  mapping: MappingConfig;
  /** The encoding the reader decoded with (`auto` resolved by the byte order mark). */
  encoding: string;
  /** Data rows, records made of them, row errors (ExportCounts). */
  rows: number;
  records: number;
  rowErrors: number;
  /** Each record is on its own physical line, from line 2 on (the nth record on line n + 1): no blank lines, no line breaks in cells. */
  oneLineEach: boolean;
  /** The cells of the file's first line, trimmed (as the server reads a header, A14); null when unknown. */
  rawHeader: readonly string[] | null;
  /** The header after our cleaning (ExportResult.header). */
  header: readonly string[];
  /** Some record has an attribute whose value is "" (the server leaves an empty cell out). */
  emptyAttributes: boolean;
  /** The CSV came compressed (gzip or zip): the upload takes the file as it is. */
  compression: 'gzip' | 'zip' | null;
  /** Some row listed one alias twice, which the connector keeps once and the upload would not. */
  aliasesMerged: boolean;
}

/** The verdict, with the upload's `mapping` and `encoding` fields when yes, or why not. */
export type Importability =
  | { importable: true; fields: { mapping: Record<string, string>; encoding: string } }
  | { importable: false; reason: string };

const PLAIN_FIELDS = /^(record_id|display_name|api_value|aliases|attributes\.[A-Za-z0-9_]{1,64})$/;

/** The column a field spec picks when it is a plain pick by header name without transforms; else null. */
function plainColumn(spec: FieldSpec): string | null {
  if (typeof spec === 'string') return spec;
  // empty_is_null sends null where the upload leaves the cell out.
  if (spec.column === undefined || spec.transforms.length > 0 || spec.empty_is_null) return null;
  return spec.column;
}

/**
 * The part of the decision that needs only the configuration: CSV read as the
 * server reads it (A14: comma, double quote, header on the first line, an
 * encoding it knows), and a mapping made only of plain column picks. Returns
 * field → column, or why not.
 */
export function importableConfig(source: SourceConfig, mapping: MappingConfig): { columns: Record<string, string> } | { reason: string } {
  if (source.type !== 'csv') return { reason: 'the source is XLSX: cell values (numbers, dates) may be rendered differently by the server' };
  if (source.delimiter !== ',') return { reason: `delimiter ${JSON.stringify(source.delimiter)}: the upload reads commas` };
  if (source.quote !== '"') return { reason: `quote ${JSON.stringify(source.quote)}: the upload reads double quotes` };
  if (source.header.skip_lines !== 0 || source.header.match !== null) return { reason: 'the header is not on the first line (header.skip_lines / header.match)' };
  if (source.encoding === 'utf-16le' || source.encoding === 'utf-16be') return { reason: `encoding ${source.encoding} is not one the upload accepts (A14)` };
  if (source.ragged_rows === 'allow') return { reason: 'ragged_rows: allow — the server may read a short row differently' };
  const rows = mapping.made?.keep?.find((m) => m !== undefined);
  if (rows) return { reason: `${rows.setting}: the feed takes only some of the export's rows (an upload would take them all)` };
  if (mapping.filters.skip_when_empty.length > 0 || mapping.filters.keep_when_match.length > 0) return { reason: 'the mapping filters rows' };
  const columns: Record<string, string> = {};
  for (const [field, spec] of Object.entries(mapping.fields)) {
    // active: our reader also takes y/n, which A14 does not list.
    if (!PLAIN_FIELDS.test(field)) return { reason: `field ${field} is not mapped by the upload exactly as by the connector` };
    const column = plainColumn(spec);
    if (column === null) return { reason: `field ${field} is not a plain column pick (transforms, constants, templates or positions)` };
    columns[field] = column;
  }
  return { columns };
}

/** The whole decision (pure). */
export function importability(f: ImportFacts): Importability {
  const cfg = importableConfig(f.source, f.mapping);
  if ('reason' in cfg) return { importable: false, reason: cfg.reason };
  if (f.compression !== null) return { importable: false, reason: `the export is compressed (${f.compression}); the upload takes a plain CSV` };
  // Our reader reads shift_jis as cp932 (what such exports really are); tell the server the same.
  const encoding = f.encoding === 'shift_jis' ? 'cp932' : f.encoding;
  if (!(UPLOAD_ENCODINGS as readonly string[]).includes(encoding)) return { importable: false, reason: `encoding ${f.encoding} is not one the upload accepts (A14)` };
  if (f.rowErrors > 0) return { importable: false, reason: `${f.rowErrors} row errors: the server would import rows the connector left out` };
  if (f.records !== f.rows) return { importable: false, reason: 'some rows did not become records' };
  // One physical line per row from line 2 on: no blank lines, no line breaks inside cells, header on line 1.
  if (!f.oneLineEach) return { importable: false, reason: 'the file has blank lines or line breaks inside cells' };
  if (f.rawHeader === null) return { importable: false, reason: 'the header line could not be read' };
  for (const [field, column] of Object.entries(cfg.columns)) {
    const ours = f.header.indexOf(column);
    // The server finds a column by its header text as written (A14); our cleaning must not have changed it.
    if (ours < 0 || f.rawHeader[ours] !== column || f.rawHeader.indexOf(column) !== ours) {
      return { importable: false, reason: `the header of ${field} (${JSON.stringify(column)}) is written differently in the file` };
    }
  }
  if (f.aliasesMerged) return { importable: false, reason: 'some rows list an alias twice (the connector keeps it once, the upload would keep both)' };
  if (f.emptyAttributes) return { importable: false, reason: 'some attribute cells are empty (the upload leaves them out, the connector sends "")' };
  return { importable: true, fields: { mapping: cfg.columns, encoding } };
}
