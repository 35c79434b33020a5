import { boundText } from '../../model/excerpt.js';
import { writeRejectFile, type RowError } from '../../sources/index.js';
import type { SourceRead } from './source-read.js';

/**
 * A3: the row errors the server gave for a sync's records, placed at the
 * lines of the export they came from (by record_id through the sorted source,
 * or by the path's row numbering), and written to the reject file.
 */

/** The 1-based file lines of record ids of an export, found in one pass (A3). */
export type LineLookup = (ids: Iterable<string>) => ReadonlyMap<string, number>;

/** The lines of an export read by readSource. */
export function sourceLines(src: SourceRead): LineLookup {
  return (ids) => src.sorted?.linesOf(ids) ?? new Map();
}

/**
 * A3: server row errors as source row errors, for the log and the reject file.
 * An error naming a record_id goes to that record's line; one without goes by
 * its `row` through `rowLines` (the path's numbering: records of a JSON body,
 * or data lines of an uploaded file), else line 0 (unknown).
 */
export function serverRowErrors(
  file: string,
  lines: LineLookup,
  errors: ReadonlyArray<{ row?: number | null | undefined; record_id?: string | null | undefined; field?: string | null | undefined; message: string }>,
  rowLines?: RowLines,
): RowError[] {
  const byId = lines(errors.flatMap((e) => (e.record_id ? [e.record_id] : [])));
  const unplaced = errors.flatMap((e) => ((!e.record_id || !byId.has(e.record_id)) && typeof e.row === 'number' ? [e.row] : []));
  const byRow = rowLines && unplaced.length > 0 ? rowLines(unplaced) : new Map<number, number>();
  return errors.map((e) => ({
    file,
    line: (e.record_id ? byId.get(e.record_id) : undefined) ?? (typeof e.row === 'number' ? byRow.get(e.row) : undefined) ?? 0,
    // The server's words may quote the cell it refused: bounded and escaped, as logs quote files (issue 11).
    column: boundText(e.field ?? 'record', 100),
    value: boundText(e.record_id ?? '', 130),
    reason: `server: ${boundText(e.message, 300)}`,
    code: 'INVALID_RECORD' as const,
  }));
}

/** Server row numbers (A3, 1-based) to 1-based source file lines, where known; asked for several at once. */
export type RowLines = (rows: readonly number[]) => ReadonlyMap<number, number>;

const ROW_LINES = new WeakMap<object, RowLines>();

/** Remember how the rows of an error a path raised map to file lines (read back by rowLinesOf). */
export function withRowLines<E extends object>(err: E, rowLines: RowLines): E {
  ROW_LINES.set(err, rowLines);
  return err;
}

/** The row numbering of an error, when the path that raised it said (withRowLines). */
export function rowLinesOf(err: unknown): RowLines | undefined {
  return err !== null && typeof err === 'object' ? ROW_LINES.get(err) : undefined;
}

/** A3 for an uploaded file: `row` counts data lines after the header, so the file line is the header's line plus `row`. */
export function uploadRowLines(headerLine: number): RowLines {
  return (rows) => new Map(rows.filter((row) => row >= 1).map((row) => [row, headerLine + row] as const));
}

/**
 * A3 for a JSON body: `row` is the 1-based index into the records sent.
 * `bodyIds` gives the ids at those indices (one pass over the body), `lines` their source lines.
 */
export function bodyRowLines(bodyIds: (rows: ReadonlySet<number>) => ReadonlyMap<number, string>, lines: LineLookup): RowLines {
  return (rows) => {
    const ids = bodyIds(new Set(rows));
    const byId = lines(ids.values());
    const out = new Map<number, number>();
    for (const [row, id] of ids) {
      const line = byId.get(id);
      if (line !== undefined) out.set(row, line);
    }
    return out;
  };
}

/**
 * Write the reject file of each export some of whose rows the server refused
 * (A3): the reader's own row errors of that file first, when it is the one
 * just read, then the server's. Best effort: a reject file that cannot be
 * written does not change the sync's outcome.
 */
export async function writeServerRejects(rows: readonly RowError[], src: SourceRead | null): Promise<void> {
  if (src?.virtual) return;
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
