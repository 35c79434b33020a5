import { fdReadStream } from '../open-file.js';
import type { Readable } from 'node:stream';
import yauzl from 'yauzl';
import { TextDecoder } from 'node:util';
import { isAscii } from 'node:buffer';
import { crc32, createInflateRaw } from 'node:zlib';
import { SourceError } from '../../model/source-error.js';
import { boundText } from '../../model/excerpt.js';
import { partName } from './part-name.js';

/**
 * What a part's reader takes off its UTF-8 bytes itself, before they are
 * decoded (issue 18: a sheet's plain rows, read as bytes, cost a third of
 * their reading as text). It may take only what it would read alike as text,
 * and only ASCII, so that the decoder never sees part of a character cut off.
 */
export interface ByteShortcut {
  /** Whether the text handed on so far is all read, so that bytes may be taken now. */
  ready(): boolean;
  /**
   * Take what it can of `x` from `from` on: the index after what it took (to
   * go on as text from there), or, when `x` ended in the middle of what it
   * would take, -(that place) - 1: the bytes from there are offered again
   * with the next chunk (or handed on as text at the end of the part).
   */
  take(x: Buffer, from: number): number;
  /** Where the text from `from` (which it did not take) should end, so that bytes may be offered again after it. */
  resume(x: Buffer, from: number): number;
}

/** One archive entry as the zip central directory describes it. */
export interface ZipEntryInfo {
  name: string;
  compressedBytes: number;
  uncompressedBytes: number;
}

// Larger pieces cost less per byte in zlib, the decoder and saxes; a sheet's records are handed on a piece at a time.
const INFLATE_CHUNK_BYTES = 128 * 1024;
// Compressed bytes read from the file at a time.
const RAW_CHUNK_BYTES = 64 * 1024;
const EMPTY = Buffer.alloc(0);
// A workbook of many sheets, each with its rels, comments and drawings, has a few thousand parts.
const MAX_ENTRIES = 10_000;

/**
 * An XLSX file opened for random access: parts are read by name in the
 * order we need them (workbook, strings, styles, then one sheet), whatever
 * their order in the zip, so nothing is spooled to temp files.
 *
 * Every entry is held to the size its central directory entry declares
 * while it inflates, so the zip-bomb check on the declared sizes
 * (zip-guard.ts) cannot be lied past.
 */
export class WorkbookArchive {
  private constructor(
    readonly file: string,
    private readonly zip: yauzl.ZipFile,
    private readonly byName: Map<string, yauzl.Entry>,
    private readonly chunkBytes: number,
  ) {}

  /**
   * Opens the zip of `size` bytes on `fd`, which stays the caller's: it
   * opened the file once (openRegularFile) to hash the same bytes that are
   * read, even if the path is replaced meanwhile, and closes it after.
   * `chunkBytes`: bytes inflated at a time (zlib's least is 64); tests make
   * it small to split characters.
   */
  static async open(file: string, fd: number, size: number, chunkBytes = INFLATE_CHUNK_BYTES): Promise<WorkbookArchive> {
    let zip: yauzl.ZipFile;
    try {
      zip = await yauzl.fromRandomAccessReaderPromise(new FdReader(fd), size, { lazyEntries: true, autoClose: false, validateEntrySizes: true, strictFileNames: false });
    } catch (err) {
      throw notZip(file, err);
    }
    // Checked before the directory is read: every entry costs memory, and empty ones pass the size checks.
    if (zip.entryCount > MAX_ENTRIES) {
      zip.close();
      throw new SourceError('WRONG_FORMAT', `${file}: the archive has ${zip.entryCount} entries, more than the ${MAX_ENTRIES} any workbook writer makes; refused as damaged or crafted`, {
        file,
        setting: 'type',
      });
    }
    const byName = new Map<string, yauzl.Entry>();
    try {
      await new Promise<void>((resolve, reject) => {
        zip.on('entry', (entry: yauzl.Entry) => {
          // Part names are case-insensitive (OPC); some writers differ from the usual casing.
          byName.set(entry.fileName.toLowerCase(), entry);
          zip.readEntry();
        });
        zip.once('end', resolve);
        zip.once('error', reject);
        zip.readEntry();
      });
    } catch (err) {
      zip.close();
      throw notZip(file, err);
    }
    return new WorkbookArchive(file, zip, byName, Math.max(64, chunkBytes));
  }

  /** The declared uncompressed size of a part; 0 when there is none. */
  declaredBytes(part: string): number {
    return this.byName.get(part.toLowerCase())?.uncompressedSize ?? 0;
  }

  /** Every entry's declared sizes, for the zip-bomb check. */
  entries(): ZipEntryInfo[] {
    return [...this.byName.values()].map((e) => ({ name: e.fileName, compressedBytes: e.compressedSize, uncompressedBytes: e.uncompressedSize }));
  }

  has(part: string): boolean {
    return this.byName.has(part.toLowerCase());
  }

  /**
   * A part's text, decoded as one stream so that a character split across
   * inflated chunks stays whole, and strictly, so that a corrupt part is
   * refused rather than read as U+FFFD. XML parts are UTF-8 unless they
   * start with a UTF-16 byte order mark.
   *
   * With `shortcut`, a UTF-8 part's bytes are offered to it first wherever
   * all the text before them has been handed on and read (see ByteShortcut):
   * what it takes is never decoded; an empty piece is yielded for a chunk it
   * took whole, so that the reader still hands on what it made of it.
   */
  async *text(part: string, shortcut?: ByteShortcut): AsyncGenerator<string> {
    const entry = this.byName.get(part.toLowerCase());
    // Part names come from the file (relationship targets, zip entry names).
    const name = partName(part);
    if (!entry) throw new SourceError('WRONG_FORMAT', `${this.file}: the workbook has no part ${name}`, { file: this.file, setting: 'type' });
    if (entry.isEncrypted()) {
      throw new SourceError('WRONG_FORMAT', `${this.file}: part ${name} is encrypted; save the workbook without a password`, { file: this.file, setting: 'type' });
    }
    let decoder: TextDecoder | null = null;
    let utf8 = true;
    /** No byte of the part was decoded yet (a byte order mark is dropped only there). */
    let atStart = true;
    // Whether the decoder holds no part of a character: the last bytes it was given ended in ASCII.
    let clean = true;
    const decode = (bytes: Buffer): string => {
      const head = atStart;
      atStart = false;
      // ASCII is UTF-8 as it is: copied into a string at half the decoder's cost (a sheet is mostly ASCII, issue 18).
      if (utf8 && clean && isAscii(bytes)) return bytes.toString('latin1');
      decoder ??= new TextDecoder(utf8 ? 'utf-8' : bytes[0] === 0xff ? 'utf-16le' : 'utf-16be', { fatal: true, ignoreBOM: !head });
      clean = bytes.length > 0 && bytes[bytes.length - 1]! < 0x80;
      return decoder.decode(bytes, { stream: true });
    };
    /** Bytes the shortcut stopped in the middle of, offered again with the next chunk (never decoded yet). */
    let held: Buffer | null = null;
    // Read as text, a chunk's bad bytes are refused before any row in it is read: the bytes offered to the shortcut
    // are checked first, by a decoder of their own over every chunk that is not ASCII (or follows one cut in a character).
    let checker: TextDecoder | null = null;
    let checked = true;
    let first = true;
    try {
      for await (const chunk of await this.inflated(entry)) {
        if (first) utf8 = !((chunk[0] === 0xff && chunk[1] === 0xfe) || (chunk[0] === 0xfe && chunk[1] === 0xff));
        first = false;
        if (shortcut === undefined || !utf8) {
          yield decode(chunk);
          continue;
        }
        if (!checked || !isAscii(chunk)) {
          checker ??= new TextDecoder('utf-8', { fatal: true });
          checker.decode(chunk, { stream: true });
          checked = chunk[chunk.length - 1]! < 0x80;
        }
        // Held bytes are joined with the chunk's head only, up to where the shortcut would resume (a row's end), not copied whole with it.
        let rest: Buffer = chunk;
        let pieces = 0;
        while (rest.length > 0) {
          let x = rest;
          rest = EMPTY;
          if (held !== null) {
            const to = shortcut.resume(x, 0);
            rest = x.subarray(to);
            x = Buffer.concat([held, x.subarray(0, to)]);
            held = null;
          }
          let from = 0;
          while (from < x.length) {
            if (clean && shortcut.ready()) {
              const took = shortcut.take(x, from);
              if (took < 0) {
                held = x.subarray(-took - 1);
                break;
              }
              from = took;
              if (from === x.length) break;
            }
            const to = shortcut.resume(x, from);
            yield decode(x.subarray(from, to));
            pieces++;
            from = to;
          }
        }
        if (pieces === 0) yield '';
      }
      if (held !== null) yield decode(held);
      if (decoder) yield (decoder as TextDecoder).decode();
    } catch (err) {
      if (err instanceof SourceError) throw err;
      if (err instanceof TypeError && (err as { code?: string }).code === 'ERR_ENCODING_INVALID_ENCODED_DATA') {
        throw new SourceError('BAD_ENCODING', `${this.file}: part ${name} is not valid ${(decoder as TextDecoder | null)?.encoding ?? 'utf-8'} text; the workbook is damaged — export it again`, { file: this.file, setting: 'type' });
      }
      throw new SourceError('WRONG_FORMAT', `${this.file}: part ${name} could not be inflated (${boundText((err as Error)?.message ?? String(err))}); the workbook is damaged — export it again`, { file: this.file, setting: 'type' });
    }
  }

  /** A part's bytes as stored (inflated, held to its declared size): the CSV inside a zip export. */
  async *bytes(part: string): AsyncGenerator<Buffer> {
    const entry = this.byName.get(part.toLowerCase());
    if (!entry) throw new SourceError('WRONG_FORMAT', `${this.file}: the archive has no entry ${part}`, { file: this.file, setting: 'type' });
    if (entry.isEncrypted()) throw new SourceError('WRONG_FORMAT', `${this.file}: entry ${part} is encrypted; export it without a password`, { file: this.file, setting: 'type' });
    yield* this.inflated(entry);
  }

  /**
   * An entry's bytes, inflated here rather than by yauzl so that the chunks
   * are large (yauzl's 16 KiB chunks cost the sheet read 0.2 s per 30 MB),
   * and held to the size and CRC-32 the central directory declares. yauzl
   * checks neither CRC nor, once we inflate ourselves, the size; a damaged
   * entry may still inflate to well-formed XML (B010 read as C010), so the
   * check is what refuses it. It can only come at the entry's end: the
   * rows read before it are thrown away with the file (read.ts).
   */
  private async *inflated(entry: yauzl.Entry): AsyncGenerator<Buffer> {
    const method = entry.compressionMethod;
    if (method !== 0 && method !== 8) {
      throw new SourceError('WRONG_FORMAT', `${this.file}: part ${partName(entry.fileName)} uses zip compression method ${method}, which XLSX does not; save the workbook again from Excel`, { file: this.file, setting: 'type' });
    }
    const raw = await this.zip.openReadStreamPromise(entry, method === 8 ? { decompress: false } : {});
    const stream = method === 8 ? raw.pipe(createInflateRaw({ chunkSize: this.chunkBytes })) : raw;
    if (stream !== raw) raw.on('error', (err) => stream.destroy(err));
    let bytes = 0;
    let crc = 0;
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        bytes += chunk.length;
        crc = crc32(chunk, crc);
        if (bytes > entry.uncompressedSize) {
          throw new SourceError(
            'ZIP_BOMB',
            `${this.file}: archive entry ${partName(entry.fileName)} inflates to more than the ${entry.uncompressedSize} bytes its directory declares; refused as damaged or crafted (a possible zip bomb)`,
            { file: this.file, setting: 'type' },
          );
        }
        yield chunk;
      }
      if (bytes !== entry.uncompressedSize) {
        throw this.corrupt(entry, `inflates to ${bytes} bytes where its directory declares ${entry.uncompressedSize}`);
      }
      if (crc !== entry.crc32) {
        throw this.corrupt(entry, `does not match its CRC-32 (${hex(crc)} where the directory declares ${hex(entry.crc32)})`);
      }
    } finally {
      // A read stopped early (a refused row, a stop) must release the file: the daemon reads for years.
      stream.destroy();
      raw.destroy();
    }
  }

  private corrupt(entry: yauzl.Entry, what: string): SourceError {
    const part = partName(entry.fileName);
    return new SourceError('ZIP_CORRUPT', `${this.file}: archive entry ${part} ${what}; the workbook is damaged (a bad copy or disk) — nothing from it was used; export it again`, {
      file: this.file,
      part,
    });
  }

  /** Closes the zip (the descriptor stays open: it is the caller's). */
  close(): void {
    this.zip.close();
  }
}

/** yauzl's reader over a descriptor it must not close (its fromFd closes the descriptor with the zip). */
class FdReader extends yauzl.RandomAccessReader {
  constructor(private readonly fd: number) {
    super();
  }

  override _readStreamForRange(start: number, end: number): Readable {
    return fdReadStream(this.fd, { start, end: end - 1, highWaterMark: RAW_CHUNK_BYTES });
  }
}

function hex(n: number): string {
  return n.toString(16).padStart(8, '0');
}

function notZip(file: string, err: unknown): SourceError {
  // yauzl's messages may quote entry names, which come from the file.
  const reason = boundText((err as Error)?.message ?? String(err));
  return new SourceError('WRONG_FORMAT', `${file}: not a valid zip archive (${reason}), so not an XLSX workbook`, { file, setting: 'type', reason });
}
