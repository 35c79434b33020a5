import type { DatasetRecord } from '../model/record.js';
import type { MappingConfig } from '../mapping/config.js';
import { BAD, FILTERED, compileMapping, truncateValue, type KeepTally, type RowMapper } from '../mapping/compile.js';
import type { SourceConfig } from './config.js';
import { SourceError } from '../model/source-error.js';
import { excerpt } from '../model/excerpt.js';
import { cleanHeader, headerCleaner, isBlankRow } from './header.js';
import { KeyIndex } from './key-index.js';
import type { ExportCounts, RecordBatch } from './types.js';
import type { RowError } from '../model/row-error.js';

/**
 * The pure core of a read: raw rows in file order → header → mapped,
 * validated, de-duplicated records, with row errors and counts. Knows nothing
 * of bytes or formats; readers feed it rows.
 */
export class RowPipeline {
  readonly counts: ExportCounts = { rows: 0, filtered: 0, records: 0, bad_rows: 0, row_errors: 0 };
  readonly rowErrors: RowError[] = [];
  rowErrorsTruncated = false;
  /**
   * The record_ids of bad rows whose own cell could be read (issue 13): an update feed's file lists
   * these records even though their rows were skipped, so its missing strategy must not touch them.
   */
  readonly badIds: string[] = [];
  /** Bad rows whose record_id could not be read (a row of another width, an id cell that failed). */
  badWithoutId = 0;
  header: string[] = [];
  private mapper: RowMapper | null = null;
  private readonly clean: (cell: string) => string;
  private searched = 0;
  private nonBlankSeen = false;
  /** Null when the caller finds repeated record_ids itself (ReadOptions.check_duplicates). */
  private readonly seen: KeyIndex | null;
  private readonly scratch: RowError[] = [];
  /** CSV rows must be as wide as the header (ragged_rows: reject); XLSX rows leave out their trailing empty cells. */
  private readonly strictWidth: boolean;
  /** The header row's first cell as written, and its line: a row starting so is checked for a repeated header. */
  private headerFirstKey: string | null = null;
  private headerLine = 0;

  constructor(
    private readonly file: string,
    private readonly source: SourceConfig,
    private readonly mapping: MappingConfig,
    checkDuplicates = true,
    private readonly unchanged: UnchangedRows | null = null,
  ) {
    this.clean = headerCleaner(source);
    this.strictWidth = source.type === 'csv' && source.ragged_rows === 'reject';
    this.seen = checkDuplicates ? new KeyIndex() : null;
  }

  private out: RecordBatch = { records: [], lines: [] };

  /** Rows whose aliases listed one alias more than once (the mapping keeps it once). */
  get aliasesMerged(): number {
    return this.mapper?.aliasesMerged ?? 0;
  }

  /** What each keep_when_match filter did so far (none before the header). */
  get kept(): readonly KeepTally[] {
    return this.mapper?.kept ?? [];
  }

  /** The records mapped since the last call. */
  take(): RecordBatch {
    const out = this.out;
    this.out = { records: [], lines: [] };
    return out;
  }

  /**
   * Map one row (readers call this straight from the parser, so cells die young).
   * `unterminated`: the file's last row, with no line break after it.
   */
  row(cells: string[], line: number, unterminated = false): void {
    if (isBlankRow(cells)) return;
    this.nonBlankSeen = true;
    if (this.mapper === null) {
      this.takeHeader(cells, line);
      return;
    }
    const width = this.header.length;
    if (this.headerFirstKey !== null && cells[0] !== undefined && mayBeHeaderCell(cells[0], this.headerFirstKey) && this.isHeaderAgain(cells)) {
      // Two exports joined into one (a writer appending, `cat a.csv b.csv`): its key would repeat, and the older row win.
      throw new SourceError(
        'REPEATED_HEADER',
        `${this.file}: the header of line ${this.headerLine} comes again at line ${line}: two exports joined into one file? Nothing from it was used — export it again`,
        { file: this.file, line },
      );
    }
    if (unterminated && cells.length < width) {
      // A writer ends every row it finishes; a short last row without its line end is where the file was cut.
      throw new SourceError(
        'TRUNCATED',
        `${this.file}: the last row (line ${line}) has ${cells.length} of the header's ${width} cells and no line end; the file is truncated (cut off while written or copied) — export it again`,
        { file: this.file, line },
      );
    }
    const maxRows = this.source.limits.max_rows;
    if (++this.counts.rows > maxRows) {
      throw new SourceError('LIMIT_ROWS', `${this.file}: more than max_rows (${maxRows}) data rows`, {
        file: this.file,
        line,
        setting: 'limits.max_rows',
      });
    }
    const same = this.unchanged === null ? false : this.unchanged.row(cells, line);
    if (same !== false) {
      // The same text as a row of the last published export at this place: what that row was (its record, or filtered out), not mapped again.
      if (same === 'filtered') this.counts.filtered++;
      else this.counts.records++;
      return;
    }
    if (this.strictWidth && cells.length !== width && this.widthError(cells, line, width)) {
      // Its cells are placed by counting delimiters: the id cell may hold another column's value.
      this.bad(null);
      return;
    }
    const merged = this.unchanged !== null ? this.mapper.aliasesMerged : 0;
    const result = this.mapper.map(cells, line, this.scratch);
    if (result === FILTERED) {
      this.counts.filtered++;
      this.unchanged?.filtered();
      return;
    }
    if (result === BAD) {
      this.bad(this.mapper.badId);
      return;
    }
    const first = this.seen ? this.seen.add(result.record_id, line) : 0;
    if (first !== 0) {
      this.scratch.push({
        file: this.file,
        line,
        column: 'record_id',
        value: result.record_id,
        reason: `duplicate record_id "${result.record_id}": also at line ${first}`,
        code: 'DUPLICATE_KEY',
      });
      this.bad(result.record_id);
      return;
    }
    this.counts.records++;
    // A row whose aliases were merged is counted so at every read: it is never taken as unchanged.
    if (this.unchanged !== null && this.mapper.aliasesMerged === merged) this.unchanged.mapped(result);
    // Without the duplicate check every record goes out: the caller decides once it has found the repeats.
    if (this.seen === null || this.source.on_row_errors === 'skip_rows' || this.counts.bad_rows === 0) {
      // Stored at its index, not pushed: a batch's array starts as one of small integers, and optimised code turns
      // it into one of objects at a store, where at a push it would be thrown away (the first push of a new batch).
      const { records, lines } = this.out;
      records[records.length] = result;
      lines.push(line);
    }
  }

  /** End of input: the file-level verdict (null when the records may be used). */
  finish(): SourceError | null {
    const ctx = { file: this.file };
    if (this.mapper === null) {
      if (!this.nonBlankSeen) return new SourceError('EMPTY_FILE', `${this.file}: is empty`, ctx);
      return new SourceError('HEADER_NOT_FOUND', `${this.file}: no header row with a cell "${this.source.header.match}" in the first ${this.source.header.search_rows} rows`, {
        ...ctx,
        setting: 'header.match',
      });
    }
    if (this.counts.rows === 0) return new SourceError('HEADER_ONLY', `${this.file}: has a header but no data rows`, ctx);
    return rowErrorVerdict(this.file, this.counts, this.source);
  }

  /** Whether a row's cells, cleaned as the header was, are the header's (trailing empty cells aside). */
  /**
   * The header again, as a joined file repeats it: the second export's byte order mark, another case or spacing
   * (Excel's "CSV UTF-8" starts each file with a BOM, so `cat a.csv b.csv` puts one before the second header).
   */
  private isHeaderAgain(cells: string[]): boolean {
    const names = cleanHeader(cells, this.clean);
    return names.length === this.header.length && names.every((n, i) => headerKey(n) === headerKey(this.header[i]!));
  }

  /**
   * CSV cells are placed by counting delimiters, so a row of another width
   * than the header has its values under the wrong columns or missing: it is
   * refused before any filter reads it (a missing cell read as empty could
   * filter a record out, and so delete it). Empty cells beyond the header
   * (Excel's trailing commas) are harmless. True when the row was refused.
   */
  private widthError(cells: string[], line: number, width: number): boolean {
    if (cells.length > width) {
      let i = width;
      while (i < cells.length && cells[i] === '') i++;
      if (i === cells.length) return false;
    }
    const short = cells.length < width;
    const missing = short ? this.header[cells.length]! : `#${cells.length}`;
    this.scratch.push({
      file: this.file,
      line,
      column: missing,
      value: short ? '' : truncateValue(cells[cells.length - 1]!),
      reason: short
        ? `${cells.length} cells where the header has ${width}: the row ends before column ${excerpt(missing)} (cut off, or delimiters lost); if the export leaves out trailing empty cells, set ragged_rows: allow`
        : `${cells.length} cells where the header has ${width}: a value beyond the header (a delimiter inside an unquoted value?)`,
      code: 'COLUMN_COUNT',
    });
    return true;
  }

  private bad(id: string | null): void {
    if (id === null) this.badWithoutId++;
    else this.badIds.push(id);
    this.counts.bad_rows++;
    this.counts.row_errors += this.scratch.length;
    const room = this.source.max_row_errors_kept - this.rowErrors.length;
    if (this.scratch.length > room) this.rowErrorsTruncated = true;
    for (let i = 0; i < Math.min(room, this.scratch.length); i++) this.rowErrors.push(this.scratch[i]!);
    this.scratch.length = 0;
  }

  private takeHeader(cells: string[], line: number): void {
    const names = cleanHeader(cells, this.clean);
    const match = this.source.header.match;
    if (match !== null && !names.includes(match)) {
      if (++this.searched >= this.source.header.search_rows) {
        throw new SourceError('HEADER_NOT_FOUND', `${this.file}: no header row with a cell "${match}" in the first ${this.searched} rows`, {
          file: this.file,
          line,
          setting: 'header.match',
        });
      }
      return;
    }
    this.header = names;
    this.headerFirstKey = headerKey(cells[0] ?? '');
    this.headerLine = line;
    this.mapper = compileMapping(this.mapping, names, this.file, line);
    this.unchanged?.header(cells);
  }
}

/**
 * Issue 18's unchanged rows (src/sync/unchanged/): told the header row's cells, asked of every data row that
 * reaches the mapping whether it is a row of the last published export, unchanged ('record': it is counted as a
 * record; 'filtered': as filtered out; either way not mapped), and told what each row it answered false of
 * became: its record, or filtered out. Only with check_duplicates false (the caller finds repeated ids) and no
 * keep_when_match filter (their tallies would miss the rows not mapped).
 */
export interface UnchangedRows {
  header(cells: readonly string[]): void;
  row(cells: readonly string[], line: number): false | 'record' | 'filtered';
  mapped(record: DatasetRecord): void;
  filtered(): void;
}

/** The on_row_errors policy applied to a read's counts: the refusal, or null when the records may be used. */
export function rowErrorVerdict(file: string, counts: Pick<ExportCounts, 'bad_rows' | 'rows'>, source: Pick<SourceConfig, 'on_row_errors' | 'max_bad_row_ratio'>): SourceError | null {
  const { bad_rows, rows } = counts;
  if (bad_rows === 0) return null;
  if (source.on_row_errors === 'reject_file') {
    return new SourceError('ROW_ERRORS', `${file}: ${bad_rows} of ${rows} rows have errors (on_row_errors: reject_file)`, { file });
  }
  const max = source.max_bad_row_ratio;
  if (bad_rows / rows > max) {
    return new SourceError('ROW_ERRORS', `${file}: ${bad_rows} of ${rows} rows have errors, more than max_bad_row_ratio ${max}`, {
      file,
      setting: 'max_bad_row_ratio',
    });
  }
  return null;
}

/** A header name as compared for a repeated header: no BOM, no outer or doubled spaces, any case. */
function headerKey(name: string): string {
  return name.replace(/^\uFEFF/, '').trim().replace(/\s+/g, ' ').toLowerCase();
}

/**
 * A cheap first test on every row's first cell before the full comparison: its length, then its first
 * characters after any BOM or spaces, in either case (most rows fail one of these without allocating).
 */
function mayBeHeaderCell(cell: string, key: string): boolean {
  if (cell.length < key.length || cell.length > key.length + 16) return false;
  if (key === '') return headerKey(cell) === '';
  let i = 0;
  while (i < cell.length && (cell.charCodeAt(i) === 0xfeff || cell.charCodeAt(i) <= 0x20)) i++;
  if (i === cell.length) return false;
  // The key's ASCII characters up to its first space (a record_id like S0000123 differs from "sku" at its second).
  for (let j = 0; j < key.length && i + j < cell.length; j++) {
    const k = key.charCodeAt(j);
    const c = cell.charCodeAt(i + j);
    if (k <= 0x20 || k >= 0x80 || c >= 0x80) break;
    if (c !== k && (c < 0x41 || c > 0x5a || c + 0x20 !== k)) return false;
  }
  // Printable ASCII keeps its length through headerKey: an id like SKU-1 under the header SKU is told apart without the regexes.
  if (cell.length !== key.length) {
    let k = 0;
    while (k < cell.length && cell.charCodeAt(k) > 0x20 && cell.charCodeAt(k) < 0x7f) k++;
    if (k === cell.length) return false;
  }
  return headerKey(cell) === key;
}
