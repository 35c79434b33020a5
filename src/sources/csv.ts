import { createReadStream } from 'node:fs';
import { finished } from 'node:stream/promises';
import { parse, CsvError } from 'csv-parse';
import type { SourceConfig } from './config.js';
import { StreamDecoder } from './decode.js';
import { SourceError } from './errors.js';
import { checkCsvHead } from './sniff.js';
import type { RowBatch } from './types.js';
import type { ByteMeter } from './meter.js';

/** Physical line breaks inside a record's cells (\r\n, \n or a lone \r count one each). */
function breaksIn(cells: string[]): number {
  let n = 0;
  for (const cell of cells) {
    for (let i = 0; i < cell.length; i++) {
      const c = cell.charCodeAt(i);
      if (c === 10) n++;
      else if (c === 13 && cell.charCodeAt(i + 1) !== 10) n++;
    }
  }
  return n;
}

/** Drops the first `count` physical lines of a text stream (preamble), before any CSV parsing sees them. */
class LineSkipper {
  constructor(private left: number) {}
  take(text: string): string {
    let at = 0;
    while (this.left > 0) {
      const nl = text.indexOf('\n', at);
      if (nl === -1) return '';
      at = nl + 1;
      this.left--;
    }
    return at === 0 ? text : text.slice(at);
  }
}

/**
 * Streams a CSV file as batches of rows with their 1-based physical line
 * numbers (lines skipped as preamble counted). Decoding, preamble skipping
 * and csv-parse all run synchronously per file chunk, so there is one await
 * per chunk, not per row.
 */
export async function* readCsvRows(file: string, source: SourceConfig, meter: ByteMeter): AsyncGenerator<RowBatch> {
  const decoder = new StreamDecoder(source.encoding, file);
  const skipper = new LineSkipper(source.header.skip_lines);
  let batch: RowBatch = { cells: [], lines: [] };
  let nextLine = source.header.skip_lines + 1;
  let lastParserLine = 0;
  const parser = parse({
    delimiter: source.delimiter === 'tab' ? '\t' : source.delimiter,
    quote: source.quote,
    relax_column_count: true,
    relax_quotes: true,
    skip_empty_lines: false,
    max_record_size: source.limits.max_record_bytes,
    on_record: (cells: string[], info: { lines: number }) => {
      batch.cells.push(cells);
      batch.lines.push(nextLine);
      // csv-parse's own count is off for \r\n inside quotes; count breaks ourselves when a record spans lines.
      const spansLines = info.lines - lastParserLine > 1;
      lastParserLine = info.lines;
      nextLine += 1 + (spansLines ? breaksIn(cells) : 0);
      return null;
    },
  });
  parser.on('error', () => {}); // read through `errored` below
  parser.resume();
  const feed = (text: string) => {
    const rest = skipper.take(text);
    if (rest.length > 0) parser.write(rest);
    if (parser.errored) throw translate(parser.errored, file, nextLine, source);
  };
  let first = true;
  const stream = createReadStream(file, { highWaterMark: 256 * 1024 });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      if (first) checkCsvHead(chunk, source, file);
      first = false;
      meter.add(chunk);
      feed(decoder.write(chunk));
      if (batch.cells.length > 0) {
        yield batch;
        batch = { cells: [], lines: [] };
      }
    }
    feed(decoder.end());
    parser.end();
    try {
      await finished(parser);
    } catch (err) {
      throw translate(err, file, nextLine, source);
    }
    if (batch.cells.length > 0) yield batch;
  } finally {
    stream.destroy();
    parser.destroy();
  }
}

function translate(err: unknown, file: string, line: number, source: SourceConfig): SourceError {
  if (err instanceof SourceError) return err;
  const ctx = { file, line };
  if (err instanceof CsvError) {
    if (err.code === 'CSV_QUOTE_NOT_CLOSED') {
      return new SourceError('TRUNCATED', `${file}: ends inside a quoted field that starts at line ${line}; the file is truncated or a quote is unbalanced`, ctx, err);
    }
    if (err.code === 'CSV_MAX_RECORD_SIZE') {
      return new SourceError(
        'LIMIT_RECORD_BYTES',
        `${file}: the record starting at line ${line} is longer than max_record_bytes (${source.limits.max_record_bytes}); an unbalanced quote?`,
        { ...ctx, setting: 'limits.max_record_bytes' },
        err,
      );
    }
    return new SourceError('MALFORMED_CSV', `${file}: malformed CSV near line ${line}: ${err.message}`, ctx, err);
  }
  return new SourceError('FILE_UNREADABLE', `${file}: could not be read: ${(err as Error)?.message ?? String(err)}`, { file }, err);
}
