import { read } from 'node:fs';
import { stat } from 'node:fs/promises';
import { parse } from 'csv-parse/sync';
import type { MadeSetting, MappingConfig } from '../../mapping/config.js';
import type { KeepTally } from '../../mapping/compile.js';
import type { DatasetRecord } from '../../model/record.js';
import { inRecordOrder, parsesBackAs, recordJson } from '../../model/record-json.js';
import type { SourceConfig } from '../../sources/config.js';
import { bomEncoding, iconvLite } from '../../sources/decode.js';
import { NEVER_FOLLOW, closeFile, openRegularFile, type LinkPolicy } from '../../sources/open-file.js';
import { writeRejectFile, type ExportCounts, type ExportResult, type RecordBatch, type RowError } from '../../sources/index.js';
import { readExportEach } from '../../sources/read.js';
import { SourceError } from '../../model/source-error.js';
import { rowErrorVerdict, type UnchangedRows } from '../../sources/pipeline.js';
import { importability, importableConfig, type Importability } from '../core/importable.js';
import type { PlanSource } from '../core/plan.js';
import { RUN_BYTES, type SortedSource } from '../disk/sorted-source.js';
import { SourceSorter } from '../disk/source-sorter.js';
import { DuplicateErrors, mergeByLine } from './duplicate-errors.js';

/** The records of one export with where each came from. */
export interface SourceRead {
  file: string;
  fileHash: string;
  /** Size of the file in bytes. */
  bytes: number;
  rows: number;
  /** Records made of it (repeated record_ids left out). */
  records: number;
  /** The records sorted by record_id on disk (issue 18); null when the file was refused. */
  sorted: SortedSource | null;
  rowErrors: RowError[];
  /** Bad rows skipped (on_row_errors: skip_rows) as their records: the ids that could be read, and how many could not (issue 13). */
  badRows?: { ids: ReadonlySet<string>; withoutId: number };
  rejected: SourceError | null;
  /** Where the reject file was written, when there were row errors. */
  rejectFile: string | null;
  /** Whether the server could map this file itself (POST /imports, A14). */
  importability: Importability;
  /** How the file was allowed to be a link (its upload copy is opened the same way). */
  links: LinkPolicy;
  /** Not a file: a restore's target made from the history (issue 14); no reject file is written for it. */
  virtual?: boolean;
  /** The file's modification time (ms): the time of its values for precedence: newest (issue 13). */
  mtimeMs?: number;
  /** A feed's file (feed-desired.ts feedRead): the time of its values, its modification time but never after it was read. */
  valuesAt?: number;
  /** Why a feed's rows took none of the file's rows (rowsTookNone), for the summary, the plan and a held change. */
  rowsNote?: string;
}

/**
 * Read and map an export (src/sources) into `workDir`, sorted by record_id
 * there (sorted-source.ts), and write its reject file beside it when rows
 * were refused. `opts.links`: whether the path may be a link (default
 * never). Memory stays bounded whatever the export's size: repeated
 * record_ids are found by the sort instead of a set of every key (issue 18).
 */
export async function readSource(
  file: string,
  source: unknown,
  mapping: unknown,
  workDir: string,
  opts: { runBytes?: number; links?: LinkPolicy; sha256?: string; valueFlags?: boolean } = {},
): Promise<SourceRead> {
  const { valueFlags, ...rest } = opts;
  return withRejectFile((await readSources(file, source, [{ mapping, workDir, ...(valueFlags === undefined ? {} : { valueFlags }) }], rest))[0]!);
}

/**
 * Bytes of records the sorts of one shared pass hold between them: up to three takers each sort as a read of its
 * own does (one run of RUN_BYTES; runs of a third of it cost a merge: about 1.5× the CPU for three takers of 100,000 rows); more
 * share it, a run being at least MIN_RUN_BYTES.
 */
const SHARED_RUN_BYTES = 3 * RUN_BYTES;
const MIN_RUN_BYTES = 1024 * 1024;

/**
 * One pass over an export for several mappings (issue 13's fan-out: one file,
 * each dataset taking it through its own rows and mapping): the file is
 * decoded and parsed once, and each mapping's records are sorted into its
 * own `workDir`. Each read is the one readSource would make of the file
 * through that mapping alone, except that its reject file is not written yet
 * (withRejectFile, when the read is used: a dataset that does not get to it
 * leaves none). The sorts share SHARED_RUN_BYTES of memory between them.
 */
export async function readSources(
  file: string,
  source: unknown,
  /** `valueFlags` (default true): the value guards' flags beside each record, for a read diffed as it is (diffsAsRead). */
  takers: ReadonlyArray<{ mapping: unknown; workDir: string; valueFlags?: boolean }>,
  opts: { runBytes?: number; links?: LinkPolicy; sha256?: string; unchanged?: SkippedRows } = {},
): Promise<SourceRead[]> {
  const src = source as SourceConfig;
  const links = opts.links ?? NEVER_FOLLOW;
  const pass = readExportEach(
    file,
    src,
    takers.map((t) => t.mapping as MappingConfig),
    { check_duplicates: false, links, ...(opts.sha256 ? { sha256: opts.sha256 } : {}), ...(opts.unchanged ? { unchanged: opts.unchanged } : {}) },
  );
  const runBytes = opts.runBytes ?? Math.max(MIN_RUN_BYTES, Math.min(RUN_BYTES, Math.floor(SHARED_RUN_BYTES / takers.length)));
  const sorts = takers.map((t) => new TakerSort(src, t.mapping as MappingConfig, t.workDir, runBytes, t.valueFlags ?? true, opts.unchanged));
  try {
    for await (const batches of pass.batches()) {
      for (let i = 0; i < sorts.length; i++) {
        const b = batches[i];
        if (b) sorts[i]!.add(b);
      }
    }
  } catch (err) {
    for (const s of sorts) s.discard();
    throw err;
  }
  const results = pass.results!;
  let head: Promise<FileHead> | null = null;
  const headOnce = () => (head ??= readHead(file, src, links));
  const out: SourceRead[] = [];
  for (let i = 0; i < sorts.length; i++) out.push(await sorts[i]!.finish(results[i]!, headOnce, links));
  const mtimeMs = await stat(file).then((st) => Math.floor(st.mtimeMs), () => 0);
  return out.map((r) => ({ ...r, mtimeMs }));
}

/** A read with its reject file written beside the export when rows were refused (best effort: none when it cannot be written). */
export async function withRejectFile(src: SourceRead): Promise<SourceRead> {
  if (src.rowErrors.length === 0) return src;
  return { ...src, rejectFile: await writeRejectFile(src.file, src.rowErrors).catch(() => null) };
}

/**
 * Rows a read took as unchanged records of the last published export (src/sync/unchanged/): never handed to the
 * sort, so what importability needs of them is told: the line of the last one, and whether one had an empty attribute.
 */
export interface SkippedRows extends UnchangedRows {
  readonly lastLine: number;
  readonly emptyAttributes: boolean;
}

/** The first line of the file as the server would read it (importability). */
type FileHead = { encoding: string; cells: string[] | null };

/** One mapping's records of a read sorted on disk, with the facts for importability gathered as they stream past. */
class TakerSort {
  readonly #sorter: SourceSorter;
  /** Only when the configuration allows an upload. */
  readonly #mayImport: boolean;
  #n = 0;
  #oneLineEach = true;
  #emptyAttributes = false;
  #lastLine = 0;

  constructor(
    private readonly src: SourceConfig,
    private readonly map: MappingConfig,
    workDir: string,
    runBytes: number | undefined,
    private readonly valueFlags: boolean,
    private readonly skipped?: SkippedRows,
  ) {
    this.#sorter = new SourceSorter(workDir, runBytes);
    this.#mayImport = !('reason' in importableConfig(src, map));
  }

  add(batch: RecordBatch): void {
    const { records, lines } = batch;
    for (let i = 0; i < records.length; i++) {
      const rec = records[i]!;
      const line = lines[i]!;
      if (this.valueFlags) this.#sorter.addRecord(rec, line);
      else {
        // A feed's row: the merge reads its fields from this record when it is kept in memory, not from a parse of its text.
        const ordered = inRecordOrder(rec);
        this.#sorter.add(rec.record_id, line, recordJson(rec), ordered !== null && parsesBackAs(ordered) ? ordered : undefined);
      }
      if (!this.#mayImport) continue;
      this.#lastLine = line;
      if (line !== ++this.#n + 1) this.#oneLineEach = false;
      if (!this.#emptyAttributes && hasEmptyAttribute(rec)) this.#emptyAttributes = true;
    }
  }

  /**
   * Whether record k (of `records`, repeats included) is on line k + 1. With rows skipped as unchanged the
   * lines are strictly increasing and the first is at least 2, so it is so exactly when the last is records + 1.
   */
  #oneLineEachOf(records: number): boolean {
    if (!this.skipped) return this.#oneLineEach;
    return records === 0 || Math.max(this.#lastLine, this.skipped.lastLine) === records + 1;
  }

  discard(): void {
    this.#sorter.discardRuns();
  }

  /** The read of `r` (this mapping's result of the pass); no reject file written yet, no modification time. */
  async finish(r: ExportResult, head: () => Promise<FileHead>, links: LinkPolicy): Promise<SourceRead> {
    const { src, map } = this;
    const file = r.file;
    const counts: ExportCounts = { ...r.counts };
    let rejected = r.rejected;
    let rowErrors = r.row_errors;
    // Sorted also when refused, so that the reject file lists the repeated ids as the reader's own check would.
    const dups = new DuplicateErrors(file, src.max_row_errors_kept);
    let sorted: SortedSource | null = this.#sorter.finish((id, line, first) => dups.add(id, line, first));
    if (dups.count > 0) {
      counts.records -= dups.count;
      counts.bad_rows += dups.count;
      counts.row_errors += dups.count;
      rowErrors = mergeByLine(rowErrors, dups.kept(), src.max_row_errors_kept);
      // A refusal of the file itself (limits, header) stands; one for bad rows is judged again with these.
      if (!rejected || rejected.code === 'ROW_ERRORS') rejected = rowErrorVerdict(file, counts, src);
    }
    if (rejected) sorted = null;
    let imp: Importability = { importable: false, reason: 'the file was refused' };
    if (!rejected) {
      const cfg = importableConfig(src, map);
      if ('reason' in cfg) imp = { importable: false, reason: cfg.reason };
      else {
        const h = await head();
        imp = importability({
          source: src,
          mapping: map,
          encoding: h.encoding,
          rows: counts.rows,
          records: counts.records,
          rowErrors: counts.row_errors,
          oneLineEach: this.#oneLineEachOf(r.counts.records),
          rawHeader: h.cells,
          header: r.header,
          aliasesMerged: r.aliases_merged_rows > 0,
          compression: r.compression,
          emptyAttributes: this.#emptyAttributes || (this.skipped?.emptyAttributes ?? false),
        });
      }
    }
    return {
      file,
      fileHash: r.sha256,
      bytes: r.bytes,
      rows: counts.rows,
      records: rejected ? 0 : counts.records,
      sorted,
      rowErrors,
      badRows: { ids: new Set(r.bad_ids), withoutId: r.bad_without_id },
      rejected,
      rejectFile: null,
      importability: imp,
      links,
      ...(rejected ? {} : rowsNotes(file, map, r.kept_by_filter)),
    };
  }
}

/**
 * A feed's rows that took none of a file's rows (issue 13's fan-out): the
 * values the column held, so a person sees why, e.g. a spreadsheet that wrote
 * store 000 as 0. Bounded: the first few distinct values.
 */
export function rowsTookNone(file: string, made: NonNullable<MadeSetting['rows']>, t: KeepTally): string {
  const seen = t.seen.length === 0 ? 'none' : `${t.seen.map((v) => (v === '' ? '(empty)' : v)).join(', ')}${t.more ? ', …' : ''}`;
  return (
    `rows: ${made.says} took 0 of ${t.tested} rows of ${file} (values seen: ${seen}): dataset ${made.dataset} gets none of them; ` +
    `write ${made.setting}.equals of dataset ${made.dataset} as the export writes the value (a spreadsheet may drop leading zeros: 000 becomes 0)`
  );
}

function rowsNotes(file: string, map: MappingConfig, kept: readonly KeepTally[] | undefined): { rowsNote?: string } {
  const notes = (kept ?? []).flatMap((t, i) => {
    const made = map.made?.keep?.[i]?.rows;
    return made && t.tested > 0 && t.taken === 0 ? [rowsTookNone(file, made, t)] : [];
  });
  return notes.length > 0 ? { rowsNote: notes.join('; ') } : {};
}

export function hasEmptyAttribute(rec: DatasetRecord): boolean {
  const a = rec.attributes;
  for (const k in a) if (a[k] === '') return true;
  return false;
}

/**
 * What the planner needs to know of the file (`imp`: the read's importability,
 * or a later verdict of this sync; `headerLine`: the 1-based line of its header).
 */
export function planSource(src: SourceRead, imp: Importability = src.importability, headerLine = 1): PlanSource {
  return {
    file: src.file,
    fileHash: src.fileHash,
    rowCount: src.rows,
    fileBytes: src.bytes,
    headerLine,
    ...(src.rowsNote ? { rowsNote: src.rowsNote } : {}),
    importable: imp.importable,
    ...(imp.importable ? { uploadFields: imp.fields } : { notImportableReason: imp.reason }),
  };
}

const HEAD_BYTES = 64 * 1024;

/** The encoding a CSV is decoded with and its first line's cells as the server reads a header (trimmed); cells null when unreadable. */
async function readHead(file: string, source: SourceConfig, links: LinkPolicy): Promise<FileHead> {
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
    const text = iconvLite().decode(head, encoding === 'shift_jis' ? 'cp932' : encoding);
    const rows = parse(text, { bom: true, to_line: 1, relax_column_count: true, relax_quotes: true }) as string[][];
    return { encoding, cells: (rows[0] ?? []).map((c) => c.trim()) };
  } catch {
    return { encoding, cells: null };
  }
}
