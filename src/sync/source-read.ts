import { read } from 'node:fs';
import { parse } from 'csv-parse/sync';
import iconv from 'iconv-lite';
import type { MappingConfig } from '../mapping/config.js';
import type { DatasetRecord } from '../model/record.js';
import type { SourceConfig } from '../sources/config.js';
import { bomEncoding } from '../sources/decode.js';
import { boundText } from '../sources/excerpt.js';
import { NEVER_FOLLOW, closeFile, openRegularFile, type LinkPolicy } from '../sources/open-file.js';
import { readExportFile, writeRejectFile, type RowError } from '../sources/index.js';
import type { SourceError } from '../sources/errors.js';
import { importability, importableConfig, type Importability } from './importable.js';
import type { PlanSource } from './plan.js';

/** The records of one export with where each came from. */
export interface SourceRead {
  file: string;
  fileHash: string;
  /** Size of the file in bytes. */
  bytes: number;
  rows: number;
  records: DatasetRecord[];
  /** record_id → 1-based file line. */
  lines: Record<string, number>;
  rowErrors: RowError[];
  rejected: SourceError | null;
  /** Where the reject file was written, when there were row errors. */
  rejectFile: string | null;
  /** Whether the server could map this file itself (POST /imports, A14). */
  importability: Importability;
  /** How the file was allowed to be a link (its upload copy is opened the same way). */
  links: LinkPolicy;
}

/** Read and map an export (src/sources), and write its reject file beside it when rows were refused. `links`: whether the path may be a link (default never). */
export async function readSource(file: string, source: unknown, mapping: unknown, links: LinkPolicy = NEVER_FOLLOW): Promise<SourceRead> {
  const src = source as SourceConfig;
  const map = mapping as MappingConfig;
  const r = await readExportFile(file, src, map, { links });
  const lines: Record<string, number> = {};
  r.records.forEach((rec, i) => (lines[rec.record_id] = r.lines[i]!));
  const rejectFile = r.row_errors.length > 0 ? await writeRejectFile(file, r.row_errors).catch(() => null) : null;
  let imp: Importability = { importable: false, reason: 'the file was refused' };
  if (!r.rejected) {
    const cfg = importableConfig(src, map);
    if ('reason' in cfg) imp = { importable: false, reason: cfg.reason };
    else {
      const head = await readHead(file, src, links);
      imp = importability({
        source: src,
        mapping: map,
        encoding: head.encoding,
        rows: r.counts.rows,
        records: r.records.length,
        rowErrors: r.counts.row_errors,
        lines: r.lines,
        rawHeader: head.cells,
        header: r.header,
        aliasesMerged: r.aliases_merged_rows > 0,
        compression: r.compression,
        emptyAttributes: r.records.some((rec) => Object.values(rec.attributes).some((v) => v === '')),
      });
    }
  }
  return {
    file,
    fileHash: r.sha256,
    bytes: r.bytes,
    rows: r.counts.rows,
    records: r.records,
    lines,
    rowErrors: r.row_errors,
    rejected: r.rejected,
    rejectFile,
    importability: imp,
    links,
  };
}

/** What the planner needs to know of the file (`imp`: the read's importability, or a later verdict of this sync). */
export function planSource(src: SourceRead, imp: Importability = src.importability): PlanSource {
  return { rowCount: src.rows, fileBytes: src.bytes, importable: imp.importable, ...(imp.importable ? {} : { notImportableReason: imp.reason }) };
}

const HEAD_BYTES = 64 * 1024;

/** The encoding a CSV is decoded with and its first line's cells as the server reads a header (trimmed); cells null when unreadable. */
async function readHead(file: string, source: SourceConfig, links: LinkPolicy): Promise<{ encoding: string; cells: string[] | null }> {
  const f = await openRegularFile(file, links);
  let head: Buffer;
  try {
    const buf = Buffer.alloc(HEAD_BYTES);
    const bytesRead = await new Promise<number>((res, rej) => read(f.fd, buf, 0, HEAD_BYTES, 0, (err, n) => (err ? rej(err) : res(n))));
    head = buf.subarray(0, bytesRead);
  } finally {
    await closeFile(f.fd);
  }
  const bom = bomEncoding(head);
  const encoding = source.encoding === 'auto' ? (bom ?? 'utf-8') : source.encoding;
  if (encoding === 'utf-16le' || encoding === 'utf-16be') return { encoding, cells: null };
  try {
    const text = iconv.decode(head, encoding === 'shift_jis' ? 'cp932' : encoding);
    const rows = parse(text, { bom: true, to_line: 1, relax_column_count: true, relax_quotes: true }) as string[][];
    return { encoding, cells: (rows[0] ?? []).map((c) => c.trim()) };
  } catch {
    return { encoding, cells: null };
  }
}

/**
 * A3: server row errors as source row errors, for the log and the reject file.
 * An error naming a record_id goes to that record's line; one without goes by
 * its `row` through `rowLine` (the path's numbering: records of a JSON body,
 * or data lines of an uploaded file), else line 0 (unknown).
 */
export function serverRowErrors(
  file: string,
  lines: Record<string, number>,
  errors: ReadonlyArray<{ row?: number | null | undefined; record_id?: string | null | undefined; field?: string | null | undefined; message: string }>,
  rowLine?: RowLine,
): RowError[] {
  return errors.map((e) => ({
    file,
    line: (e.record_id ? lines[e.record_id] : undefined) ?? (typeof e.row === 'number' && rowLine ? rowLine(e.row) : undefined) ?? 0,
    // The server's words may quote the cell it refused: bounded and escaped, as logs quote files (issue 11).
    column: boundText(e.field ?? 'record', 100),
    value: boundText(e.record_id ?? '', 130),
    reason: `server: ${boundText(e.message, 300)}`,
    code: 'INVALID_RECORD' as const,
  }));
}

/** A server row number (A3, 1-based) to a 1-based source file line, when known. */
export type RowLine = (row: number) => number | undefined;

const ROW_LINES = new WeakMap<object, RowLine>();

/** Remember how the rows of an error a path raised map to file lines (read back by rowLineOf). */
export function withRowLine<E extends object>(err: E, rowLine: RowLine): E {
  ROW_LINES.set(err, rowLine);
  return err;
}

/** The row numbering of an error, when the path that raised it said (withRowLine). */
export function rowLineOf(err: unknown): RowLine | undefined {
  return err !== null && typeof err === 'object' ? ROW_LINES.get(err) : undefined;
}

/** A3 for an uploaded file: `row` counts data lines after the header, so the file line is the header's line plus `row`. */
export function uploadRowLine(headerLine: number): RowLine {
  return (row) => (row >= 1 ? headerLine + row : undefined);
}

/** A3 for a JSON body: `row` is the 1-based index into the records sent; their ids give the source lines. */
export function bodyRowLine(bodyIds: () => readonly string[], lines: Record<string, number>): RowLine {
  let ids: readonly string[] | null = null;
  return (row) => {
    ids ??= bodyIds();
    const id = ids[row - 1];
    return id === undefined ? undefined : lines[id];
  };
}

/**
 * Write the reject file of each export some of whose rows the server refused
 * (A3): the reader's own row errors of that file first, when it is the one
 * just read, then the server's. Best effort: a reject file that cannot be
 * written does not change the sync's outcome.
 */
export async function writeServerRejects(rows: readonly RowError[], src: SourceRead | null): Promise<void> {
  const byFile = new Map<string, RowError[]>();
  for (const r of rows) {
    if (!r.file) continue;
    const list = byFile.get(r.file);
    if (list) list.push(r);
    else byFile.set(r.file, [r]);
  }
  for (const [file, list] of byFile) {
    const ownRows = src && src.file === file ? src.rowErrors : [];
    await writeRejectFile(file, [...ownRows, ...list.sort((a, b) => a.line - b.line)]).catch(() => null);
  }
}
