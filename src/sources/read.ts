import type { DatasetRecord } from '../model/record.js';
import type { MappingConfig } from '../mapping/config.js';
import type { SourceConfig } from './config.js';
import { compressionOf, readHead, type Compression } from './compressed.js';
import { readCsvRows } from './csv.js';
import { SourceError } from '../model/source-error.js';
import { ByteMeter } from './meter.js';
import { NEVER_FOLLOW, closeFile, fileState, hashFd, openRegularFile, type LinkPolicy, type OpenedFile } from './open-file.js';
import { RowPipeline, type UnchangedRows } from './pipeline.js';
import type { ExportResult, OpenExport, RecordBatch, RowSink } from './types.js';

/**
 * One streaming read of an export. Iterate it (records, or `batches()` for
 * speed); iteration ends normally only when the file may be used. When the
 * file is refused (file-level problem, or row errors beyond the policy), the
 * iteration throws the SourceError after the last batch, so a consumer that
 * streams into a diff must treat a throw as "use nothing". `result` is set
 * once iteration has ended either way.
 */
export class ExportReader implements AsyncIterable<DatasetRecord> {
  readonly #pass: ExportPass;

  constructor(
    readonly file: string,
    source: SourceConfig,
    mapping: MappingConfig,
    options: ReadOptions = {},
  ) {
    this.#pass = new ExportPass(file, source, [mapping], options);
  }

  /** The outcome; null until iteration has finished. */
  get result(): ExportResult | null {
    return this.#pass.results?.[0] ?? null;
  }

  /** Validated records in file order, a file chunk at a time (one await per batch, not per record). */
  async *batches(): AsyncGenerator<RecordBatch> {
    for await (const [out] of this.#pass.batches()) if (out && out.records.length > 0) yield out;
    const rejected = this.result!.rejected;
    if (rejected) throw rejected;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<DatasetRecord> {
    for await (const batch of this.batches()) yield* batch.records;
  }
}

/**
 * One pass over an export for several mappings at once (issue 13's fan-out:
 * one file, each dataset taking it through its own rows and mapping): the
 * file is opened, decoded and parsed once, and each row goes to one
 * RowPipeline per mapping. Each mapping's result is what a read through it
 * alone would give (ExportReader is this with one mapping): a refusal of the
 * file itself (its size, bytes, encoding, header, a cut last row) is every
 * mapping's; one that comes of a mapping (a column it names is missing) stops
 * that mapping only, the others read on. Never throws a SourceError: each
 * result says whether it was refused.
 */
export class ExportPass {
  private done: ExportResult[] | null = null;
  private started = false;
  private compression: Compression = null;

  constructor(
    readonly file: string,
    private readonly source: SourceConfig,
    private readonly mappings: readonly MappingConfig[],
    private readonly options: ReadOptions = {},
  ) {}

  /** One outcome per mapping, in their order; null until iteration has finished. */
  get results(): readonly ExportResult[] | null {
    return this.done;
  }

  /** After each file chunk, each mapping's records mapped since the last (null once that mapping was refused). */
  async *batches(): AsyncGenerator<Array<RecordBatch | null>> {
    if (this.started) throw new SourceError('FILE_UNREADABLE', `${this.file}: an ExportReader can be iterated once`, { file: this.file });
    this.started = true;
    const unchanged = this.options.unchanged ?? null;
    if (unchanged !== null && (this.mappings.length !== 1 || this.options.check_duplicates !== false)) throw new TypeError('unchanged rows are for one mapping without the duplicate check');
    const pipelines = this.mappings.map((m) => new RowPipeline(this.file, this.source, m, this.options.check_duplicates ?? true, unchanged));
    const meter = new ByteMeter(this.file, this.source.limits.max_file_bytes);
    // Mappings refused before the end (and the bytes read by then, as a read of their own would have stopped there).
    const stopped: Array<{ err: SourceError; bytes: number } | null> = pipelines.map(() => null);
    // A refusal of the file for every mapping still reading it.
    let failed: SourceError | null = null;
    let opened: OpenedFile | null = null;
    let size = 0;
    try {
      opened = await openRegularFile(this.file, this.options.links ?? NEVER_FOLLOW);
      size = this.checkSize(opened.size);
      const input = { file: this.file, fd: opened.fd, size };
      for await (const _ of this.rows(input, meter, rowSink(pipelines, stopped, meter))) yield pipelines.map((p, i) => (stopped[i] ? null : p.take()));
      await this.checkUnchanged(opened, meter, true);
    } catch (err) {
      if (!(err instanceof SourceError)) throw err;
      failed = err;
      // A refusal of a file that was still being written (a cut last row, say) is that: it is read again.
      if (opened && err.code !== 'FILE_CHANGED') failed = await this.checkUnchanged(opened, meter, false).then(() => err, (changed: SourceError) => changed);
    } finally {
      // Files are identified by content (house style 7), so a refused file gets its whole hash too.
      const complete = meter.bytes === size || size === 0 || size > this.source.limits.max_file_bytes;
      const expected = this.options.sha256;
      let sha256: string;
      let changed = failed?.code === 'FILE_CHANGED' ? failed : null;
      if (complete || opened === null) {
        sha256 = meter.digest();
        if (expected !== undefined && opened !== null && meter.bytes === size && size > 0 && sha256 !== expected && changed === null) {
          changed = this.changedSinceHashed(expected, sha256);
          sha256 = expected;
        }
      } else sha256 = expected ?? (await hashFd(opened.fd).catch(() => meter.digest()));
      if (opened) await closeFile(opened.fd);
      this.done = pipelines.map((p, i) => ({
        file: this.file,
        sha256,
        bytes: stopped[i]?.bytes ?? meter.bytes,
        header: p.header,
        counts: p.counts,
        row_errors: p.rowErrors,
        row_errors_truncated: p.rowErrorsTruncated,
        bad_ids: p.badIds,
        bad_without_id: p.badWithoutId,
        aliases_merged_rows: p.aliasesMerged,
        kept_by_filter: p.kept,
        compression: this.compression,
        // A file that changed while it was read is nobody's (each is read again); else the mapping's own verdict.
        rejected: changed ?? stopped[i]?.err ?? (failed || p.finish()),
      }));
    }
  }

  /** Rows parsed so far, after each chunk (CSV) or every few hundred rows (XLSX). */
  private async *rows(input: OpenExport, meter: ByteMeter, sink: RowSink): AsyncIterable<void> {
    if (this.source.type === 'csv') {
      this.compression = compressionOf(await readHead(input.fd), this.file);
      yield* readCsvRows(input, this.source, meter, sink, this.options.chunk_bytes, this.compression);
      return;
    }
    // Loaded only for XLSX sources, so that a CSV-only connector never loads the zip and XML readers.
    const { readXlsxRows } = await import('./xlsx.js');
    yield* readXlsxRows(input, this.source, meter, sink, this.options.chunk_bytes);
  }

  /** The size of the opened file, within the limits. */
  private checkSize(size: number): number {
    const ctx = { file: this.file };
    if (size === 0) throw new SourceError('EMPTY_FILE', `${this.file}: is empty (0 bytes)`, ctx);
    const max = this.source.limits.max_file_bytes;
    if (size > max) throw new SourceError('LIMIT_FILE_BYTES', `${this.file}: ${size} bytes, more than max_file_bytes (${max})`, { ...ctx, setting: 'limits.max_file_bytes' });
    return size;
  }

  /** The bytes read are not the ones hashed when the file was handed on: it was rewritten in between. */
  private changedSinceHashed(expected: string, read: string): SourceError {
    return new SourceError(
      'FILE_CHANGED',
      `${this.file}: its content changed after it was found (sha256 ${expected.slice(0, 12)}… then, ${read.slice(0, 12)}… when read); nothing from it was used — it is read again once it settles (if the writer pauses, raise watch.settle_ms)`,
      { file: this.file, setting: 'watch.settle_ms' },
    );
  }

  /**
   * The rows read are the file's only if it did not change while it was read:
   * a writer still appending (settle_ms too short for it) or rewriting in
   * place would leave rows read from a file that never existed whole, and
   * rows missing from it would be deleted. Then it is read again later.
   */
  private async checkUnchanged(opened: OpenedFile, meter: ByteMeter, readToEnd: boolean): Promise<void> {
    const now = await fileState(opened.fd);
    if ((!readToEnd || meter.bytes === opened.size) && now.size === opened.size && now.mtimeMs === opened.mtimeMs) return;
    throw new SourceError(
      'FILE_CHANGED',
      `${this.file}: changed while it was read (${opened.size} bytes when opened, ${meter.bytes} read, ${now.size} now); nothing from it was used — it is read again once it settles (if the writer pauses, raise watch.settle_ms)`,
      { file: this.file, setting: 'watch.settle_ms' },
    );
  }
}

/**
 * Where the parser hands each row: the one pipeline (its refusal is the read's), or each pipeline not
 * refused yet. A pipeline's refusal stops that pipeline alone (its records of the chunk are never handed
 * on, as a read of its own never finished the chunk); the last one's stops the pass.
 */
function rowSink(pipelines: readonly RowPipeline[], stopped: Array<{ err: SourceError; bytes: number } | null>, meter: ByteMeter): RowSink {
  if (pipelines.length === 1) {
    const only = pipelines[0]!;
    return (cells, line, unterminated) => only.row(cells, line, unterminated);
  }
  let live = pipelines.length;
  return (cells, line, unterminated) => {
    for (let i = 0; i < pipelines.length; i++) {
      if (stopped[i] !== null) continue;
      try {
        pipelines[i]!.row(cells, line, unterminated);
      } catch (err) {
        if (!(err instanceof SourceError) || live === 1) throw err;
        stopped[i] = { err, bytes: meter.bytes };
        live--;
      }
    }
  };
}

/** Tuning of one read. */
export interface ReadOptions {
  /**
   * Bytes read from the file at a time (CSV; default 64 KiB), or inflated at a time (XLSX; default
   * 128 KiB, at least 64). The records of a chunk are alive until the chunk is done, so smaller chunks
   * mean less for each young-generation GC to copy (for CSV, 256 KiB cost 15% more CPU and 40 MB more
   * RSS over a million rows). Tests use tiny chunks to split characters.
   */
  chunk_bytes?: number;
  /** Whether the path may be a symbolic link (default: never; see LinkPolicy). */
  links?: LinkPolicy;
  /**
   * false: repeated record_ids are not looked for (default true). For a caller
   * that finds them itself without holding every key in memory (the sync's
   * external sort) and then applies `rowErrorVerdict` to the counts with them;
   * every valid record is then yielded, also after a bad row.
   */
  check_duplicates?: boolean;
  /**
   * The file's content hash as taken when it was handed on (the watcher's
   * file job hashes each file once): a read that finds other bytes is
   * FILE_CHANGED, and a read refused before the end needs no second pass to
   * name the file's content.
   */
  sha256?: string;
  /** Rows taken as unchanged records of the last published export (UnchangedRows; one mapping, check_duplicates false). */
  unchanged?: UnchangedRows;
}

/** Start reading an export through a source and mapping (parsed configs); nothing is read until iterated. */
export function readExport(file: string, source: SourceConfig, mapping: MappingConfig, options: ReadOptions = {}): ExportReader {
  return new ExportReader(file, source, mapping, options);
}

/** Start one pass over an export for several mappings (ExportPass); nothing is read until iterated. */
export function readExportEach(file: string, source: SourceConfig, mappings: readonly MappingConfig[], options: ReadOptions = {}): ExportPass {
  return new ExportPass(file, source, mappings, options);
}

/** A collected read: every usable record (empty when rejected) and the result. Never throws a SourceError; it is in `rejected`. */
export interface CollectedExport extends ExportResult {
  records: DatasetRecord[];
  lines: number[];
}

/** Convenience for small files, tests and preview: read all records into memory. */
export async function readExportFile(file: string, source: SourceConfig, mapping: MappingConfig, options: ReadOptions = {}): Promise<CollectedExport> {
  const reader = readExport(file, source, mapping, options);
  const records: DatasetRecord[] = [];
  const lines: number[] = [];
  try {
    for await (const batch of reader.batches()) {
      for (const r of batch.records) records.push(r);
      for (const l of batch.lines) lines.push(l);
    }
  } catch (err) {
    if (!(err instanceof SourceError)) throw err;
  }
  const result = reader.result!;
  return result.rejected ? { ...result, records: [], lines: [] } : { ...result, records, lines };
}
