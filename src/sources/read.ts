import type { DatasetRecord } from '../model/record.js';
import type { MappingConfig } from '../mapping/config.js';
import type { SourceConfig } from './config.js';
import { compressionOf, readHead, type Compression } from './compressed.js';
import { readCsvRows } from './csv.js';
import { SourceError } from '../model/source-error.js';
import { ByteMeter } from './meter.js';
import { NEVER_FOLLOW, closeFile, fileState, hashFd, openRegularFile, type LinkPolicy, type OpenedFile } from './open-file.js';
import { RowPipeline } from './pipeline.js';
import type { ExportResult, OpenExport, RecordBatch } from './types.js';

/**
 * One streaming read of an export. Iterate it (records, or `batches()` for
 * speed); iteration ends normally only when the file may be used. When the
 * file is refused (file-level problem, or row errors beyond the policy), the
 * iteration throws the SourceError after the last batch, so a consumer that
 * streams into a diff must treat a throw as "use nothing". `result` is set
 * once iteration has ended either way.
 */
export class ExportReader implements AsyncIterable<DatasetRecord> {
  private done: ExportResult | null = null;
  private started = false;
  private compression: Compression = null;

  constructor(
    readonly file: string,
    private readonly source: SourceConfig,
    private readonly mapping: MappingConfig,
    private readonly options: ReadOptions = {},
  ) {}

  /** The outcome; null until iteration has finished. */
  get result(): ExportResult | null {
    return this.done;
  }

  /** Validated records in file order, a file chunk at a time (one await per batch, not per record). */
  async *batches(): AsyncGenerator<RecordBatch> {
    if (this.started) throw new SourceError('FILE_UNREADABLE', `${this.file}: an ExportReader can be iterated once`, { file: this.file });
    this.started = true;
    const pipeline = new RowPipeline(this.file, this.source, this.mapping, this.options.check_duplicates ?? true);
    const meter = new ByteMeter(this.file, this.source.limits.max_file_bytes);
    let rejected: SourceError | null = null;
    let opened: OpenedFile | null = null;
    let size = 0;
    try {
      opened = await openRegularFile(this.file, this.options.links ?? NEVER_FOLLOW);
      size = this.checkSize(opened.size);
      const input = { file: this.file, fd: opened.fd, size };
      for await (const out of this.rows(input, meter, pipeline)) {
        if (out.records.length > 0) yield out;
      }
      await this.checkUnchanged(opened, meter, true);
      rejected = pipeline.finish();
    } catch (err) {
      if (!(err instanceof SourceError)) throw err;
      rejected = err;
      // A refusal of a file that was still being written (a cut last row, say) is that: it is read again.
      if (opened && err.code !== 'FILE_CHANGED') rejected = await this.checkUnchanged(opened, meter, false).then(() => err, (changed: SourceError) => changed);
    } finally {
      // Files are identified by content (house style 7), so a refused file gets its whole hash too.
      const complete = meter.bytes === size || size === 0 || size > this.source.limits.max_file_bytes;
      const expected = this.options.sha256;
      let sha256: string;
      if (complete || opened === null) {
        sha256 = meter.digest();
        if (expected !== undefined && opened !== null && meter.bytes === size && size > 0 && sha256 !== expected && rejected?.code !== 'FILE_CHANGED') {
          rejected = this.changedSinceHashed(expected, sha256);
          sha256 = expected;
        }
      } else sha256 = expected ?? (await hashFd(opened.fd).catch(() => meter.digest()));
      if (opened) await closeFile(opened.fd);
      this.done = {
        file: this.file,
        sha256,
        bytes: meter.bytes,
        header: pipeline.header,
        counts: pipeline.counts,
        row_errors: pipeline.rowErrors,
        row_errors_truncated: pipeline.rowErrorsTruncated,
        bad_ids: pipeline.badIds,
        bad_without_id: pipeline.badWithoutId,
        aliases_merged_rows: pipeline.aliasesMerged,
        compression: this.compression,
        rejected,
      };
    }
    if (rejected) throw rejected;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<DatasetRecord> {
    for await (const batch of this.batches()) yield* batch.records;
  }

  /** Records mapped so far, after each chunk (CSV) or every few hundred rows (XLSX). */
  private async *rows(input: OpenExport, meter: ByteMeter, pipeline: RowPipeline): AsyncIterable<RecordBatch> {
    const sink = (cells: string[], line: number, unterminated?: boolean) => pipeline.row(cells, line, unterminated);
    if (this.source.type === 'csv') {
      this.compression = compressionOf(await readHead(input.fd), this.file);
      for await (const _ of readCsvRows(input, this.source, meter, sink, this.options.chunk_bytes, this.compression)) yield pipeline.take();
      return;
    }
    // Loaded only for XLSX sources, so that a CSV-only connector never loads the zip and XML readers.
    const { readXlsxRows } = await import('./xlsx.js');
    for await (const _ of readXlsxRows(input, this.source, meter, sink, this.options.chunk_bytes)) yield pipeline.take();
  }

  /** The size of the opened file, within the limits. */
  private checkSize(size: number): number {
    const ctx = { file: this.file };
    if (size === 0) throw new SourceError('EMPTY_FILE', `${this.file}: is empty (0 bytes)`, ctx);
    const max = this.source.limits.max_file_bytes;
    if (size > max) throw new SourceError('LIMIT_FILE_BYTES', `${this.file}: ${size} bytes, more than max_file_bytes (${max})`, { ...ctx, setting: 'limits.max_file_bytes' });
    return size;
  }

  /**
   * The rows read are the file's only if it did not change while it was read:
   * a writer still appending (settle_ms too short for it) or rewriting in
   * place would leave rows read from a file that never existed whole, and
   * rows missing from it would be deleted. Then it is read again later.
   */
  /** The bytes read are not the ones hashed when the file was handed on: it was rewritten in between. */
  private changedSinceHashed(expected: string, read: string): SourceError {
    return new SourceError(
      'FILE_CHANGED',
      `${this.file}: its content changed after it was found (sha256 ${expected.slice(0, 12)}… then, ${read.slice(0, 12)}… when read); nothing from it was used — it is read again once it settles (if the writer pauses, raise watch.settle_ms)`,
      { file: this.file, setting: 'watch.settle_ms' },
    );
  }

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
}

/** Start reading an export through a source and mapping (parsed configs); nothing is read until iterated. */
export function readExport(file: string, source: SourceConfig, mapping: MappingConfig, options: ReadOptions = {}): ExportReader {
  return new ExportReader(file, source, mapping, options);
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
