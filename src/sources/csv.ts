import { openCsvBytes, type Compression } from './compressed.js';
import { finished } from 'node:stream/promises';
import { Parser, CsvError } from 'csv-parse';
import type { SourceConfig } from './config.js';
import { StreamDecoder, bomEncoding } from './decode.js';
import { Utf8Checker } from './utf8-check.js';
import { ByteGuard } from './byte-guard.js';
import { SourceError } from '../model/source-error.js';
import { checkCsvHead } from './sniff.js';
import type { ByteMeter } from './meter.js';
import type { OpenExport, RowSink } from './types.js';
import { boundText } from '../model/excerpt.js';

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

/** Drops the first `count` physical lines of a text or byte stream (preamble), before any CSV parsing sees them. */
class LineSkipper {
  constructor(private left: number) {}
  take<T extends string | Buffer>(data: T): T | null {
    let at = 0;
    while (this.left > 0) {
      const nl = data.indexOf('\n', at);
      if (nl === -1) return null;
      at = nl + 1;
      this.left--;
    }
    if (at === 0) return data;
    return (typeof data === 'string' ? data.slice(at) : (data as Buffer).subarray(at)) as T;
  }
}

/**
 * csv-parse's documented Parser with `push` taken over: each record goes
 * straight to `onRecord` with the parser's line counter (`info.lines`),
 * instead of through the stream's object buffer. The hot path of a read.
 */
class RowParser extends Parser {
  onRecord: (cells: string[], lastLine: number) => void = () => {};
  /** Whether `decodeFieldsInPlace` took effect (tests check it, so a csv-parse upgrade cannot quietly undo it). */
  readonly fastFields = decodeFieldsInPlace(this);
  override push(chunk: unknown): boolean {
    if (chunk === null) return super.push(null);
    this.onRecord(chunk as string[], this.info.lines);
    return true;
  }
}

interface FieldBuffer {
  buf: Buffer;
  length: number;
  toString(encoding?: BufferEncoding): string | Uint8Array;
}

/**
 * csv-parse collects each field's bytes in a buffer (`state.field`) and turns
 * them into text with `buf.slice(0, length).toString(encoding)`: a Buffer view
 * made and dropped for every field, a quarter of a million-row read. Decoding
 * the same bytes with `buf.toString(encoding, 0, length)` gives the same text
 * without the view. Applied only when the parser has the expected shape;
 * otherwise the parser is left as it is (same result, slower).
 */
export function decodeFieldsInPlace(parser: Parser): boolean {
  const field = (parser as unknown as { state?: { field?: Partial<FieldBuffer> } }).state?.field;
  if (!field || !Buffer.isBuffer(field.buf) || typeof field.length !== 'number' || typeof field.toString !== 'function') return false;
  const plain = field.toString;
  field.toString = function (this: FieldBuffer, encoding?: BufferEncoding) {
    return encoding ? this.buf.toString(encoding, 0, this.length) : plain.call(this, encoding);
  };
  return true;
}

/**
 * Streams a CSV file into `sink`, row by row with their 1-based physical line
 * numbers, yielding after each file chunk (lines skipped as preamble counted). Validation or decoding,
 * preamble skipping and csv-parse all run synchronously per file chunk, so
 * there is one await per chunk, not per row. UTF-8 bytes go to csv-parse as
 * they are (checked by `isUtf8`); other encodings are decoded by iconv-lite.
 * The last row is marked `unterminated` when the file does not end with a
 * line break (a cut-off file ends that way; see RowPipeline.row).
 */
export async function* readCsvRows(
  input: OpenExport,
  source: SourceConfig,
  meter: ByteMeter,
  sink: RowSink,
  chunkBytes = 64 * 1024,
  compression: Compression = null,
): AsyncGenerator<void> {
  const { file } = input;
  const skipper = new LineSkipper(source.header.skip_lines);
  let nextLine = source.header.skip_lines + 1;
  let lastParserLine = 0;
  const parser = new RowParser({
    delimiter: source.delimiter === 'tab' ? '\t' : source.delimiter,
    quote: source.quote,
    bom: true,
    relax_column_count: true,
    relax_quotes: true,
    skip_empty_lines: false,
    max_record_size: source.limits.max_record_bytes,
  });
  // Each record is handed on when the next one comes, so that the last one can be told apart (unterminated).
  let held: string[] | null = null;
  let heldLine = 0;
  let endsWithBreak = false;
  parser.onRecord = (cells, lastLine) => {
    const line = nextLine;
    // csv-parse's own count is off for \r\n inside quotes; count breaks ourselves when a record spans lines.
    const spansLines = lastLine - lastParserLine > 1;
    lastParserLine = lastLine;
    nextLine += 1 + (spansLines ? breaksIn(cells) : 0);
    if (held !== null) sink(held, heldLine, false);
    held = cells;
    heldLine = line;
  };
  parser.on('error', () => {}); // read through `errored` below
  const feed = (data: string | Buffer) => {
    const rest = skipper.take(data);
    if (rest !== null && rest.length > 0) {
      const last = typeof rest === 'string' ? rest.charCodeAt(rest.length - 1) : rest[rest.length - 1];
      endsWithBreak = last === 10 || last === 13;
      parser.write(rest);
    }
    if (parser.errored) throw failed(parser.errored);
  };
  // A record followed by a parse error was complete: it is handed on first (the header, say, is then known).
  const failed = (err: unknown): SourceError => {
    const complete = held;
    held = null;
    if (complete !== null) sink(complete, heldLine, false);
    return translate(err, file, nextLine, source);
  };
  const bytesIn = await openCsvBytes(input, compression, source, meter, chunkBytes).catch((err: unknown) => {
    parser.destroy();
    throw err;
  });
  const badUtf8 = async () => {
    const line = await lineOfFirstBadUtf8(bytesIn.again());
    return new SourceError('BAD_ENCODING', `${file}: bytes that are not valid UTF-8 at line ${line}; check the source's encoding setting`, {
      file,
      line,
      setting: 'encoding',
    });
  };
  let decoder: StreamDecoder | null = null;
  let utf8: Utf8Checker | null = null;
  let head: Buffer | null = Buffer.alloc(0);
  // The first bytes decide the format check and the BOM; they may arrive over several tiny chunks.
  const take = (chunk: Buffer): Buffer | null => {
    if (head === null) return chunk;
    head = Buffer.concat([head, chunk]);
    if (head.length < 8 && chunk.length > 0) return null;
    const first = head;
    head = null;
    checkCsvHead(first, source, file);
    const bom = bomEncoding(first);
    const isUtf8 = source.encoding === 'utf-8' || (source.encoding === 'auto' && (bom === null || bom === 'utf-8'));
    if (isUtf8) utf8 = new Utf8Checker();
    else decoder = new StreamDecoder(source.encoding, file);
    guard = new ByteGuard(file, () => bytesIn.again(), source.encoding === 'auto' ? (bom ?? 'utf-8') : source.encoding);
    return first;
  };
  let guard: ByteGuard | null = null;
  const consume = async (chunk: Buffer) => {
    await guard!.check(chunk);
    if (utf8) {
      if (!utf8.check(chunk)) throw await badUtf8();
      feed(chunk);
    } else {
      let text: string;
      try {
        text = decoder!.write(chunk);
      } catch (err) {
        // Bytes invalid in cp932 that are valid UTF-8: say which setting is right.
        if (err instanceof SourceError && err.code === 'BAD_ENCODING' && guard!.looksLikeUtf8()) throw guard!.utf8Refusal(err.context.line);
        throw err;
      }
      feed(text);
    }
  };
  try {
    for await (const raw of bytesIn.bytes()) {
      const chunk = take(raw);
      if (chunk === null) continue;
      await consume(chunk);
      yield;
    }
    const rest = take(Buffer.alloc(0));
    if (rest !== null && rest.length > 0) await consume(rest);
    if (utf8 !== null && !(utf8 as Utf8Checker).end()) throw await badUtf8();
    if (decoder !== null) feed((decoder as StreamDecoder).end());
    (guard as ByteGuard | null)?.end();
    parser.end();
    parser.resume();
    try {
      await finished(parser);
    } catch (err) {
      throw failed(err);
    }
    const last = held as string[] | null; // assigned in the parser's callback
    if (last !== null) sink(last, heldLine, !endsWithBreak);
    yield;
  } finally {
    bytesIn.close();
    parser.destroy();
  }
}

/** The 1-based line of the first invalid UTF-8 sequence (the rare path: the file is read again from the start). */
async function lineOfFirstBadUtf8(bytes: AsyncIterable<Buffer>): Promise<number> {
  const decoder = new TextDecoder('utf-8', { fatal: false });
  let line = 1;
  for await (const chunk of bytes) {
    const text = decoder.decode(chunk, { stream: true });
    const bad = text.indexOf('\uFFFD');
    for (let i = text.indexOf('\n'); i !== -1 && (bad === -1 || i < bad); i = text.indexOf('\n', i + 1)) line++;
    if (bad !== -1) return line;
  }
  return line;
}

function translate(err: unknown, file: string, line: number, source: SourceConfig): SourceError {
  if (err instanceof SourceError) return err;
  const ctx = { file, line };
  if (err instanceof CsvError) {
    if (err.code === 'CSV_QUOTE_NOT_CLOSED') {
      return new SourceError('TRUNCATED', `${file}: ends inside a quoted field that starts at line ${line}; the file is truncated or a quote is unbalanced`, ctx);
    }
    if (err.code === 'CSV_MAX_RECORD_SIZE') {
      return new SourceError(
        'LIMIT_RECORD_BYTES',
        `${file}: the record starting at line ${line} is longer than max_record_bytes (${source.limits.max_record_bytes}); an unbalanced quote?`,
        { ...ctx, setting: 'limits.max_record_bytes' },
      );
    }
    // A CsvError carries the record it was reading (its fields would reach a log through `cause`): only its code is kept.
    return new SourceError('MALFORMED_CSV', `${file}: malformed CSV near line ${line}: ${boundText(err.message, 160)}`, { ...ctx, csv_code: err.code });
  }
  return new SourceError('FILE_UNREADABLE', `${file}: could not be read: ${(err as Error)?.message ?? String(err)}`, { file }, err);
}
