import { read } from 'node:fs';
import { promisify } from 'node:util';
import { createGunzip } from 'node:zlib';
import type { SourceConfig } from './config.js';
import { SourceError } from '../model/source-error.js';
import type { ByteMeter } from './meter.js';
import { fdReadStream } from './open-file.js';
import type { OpenExport } from './types.js';
import { checkArchiveSizes, checkRatio, checkTotal } from './xlsx/zip-guard.js';

/** What a CSV export arrives in: as it is, gzip (`.csv.gz`), or a zip holding one CSV. Told by content, never by name. */
export type Compression = 'gzip' | 'zip' | null;

const GZIP = [0x1f, 0x8b];
const ZIP = [0x50, 0x4b, 0x03, 0x04];
// Formats we do not read, named so that the message says what the file is instead of "NUL bytes".
const OTHER: Array<{ magic: number[]; name: string }> = [
  { magic: [0x42, 0x5a, 0x68], name: 'bzip2' },
  { magic: [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00], name: 'xz' },
  { magic: [0x28, 0xb5, 0x2f, 0xfd], name: 'zstd' },
  { magic: [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c], name: '7-Zip' },
  { magic: [0x52, 0x61, 0x72, 0x21, 0x1a, 0x07], name: 'RAR' },
];

const startsWith = (head: Uint8Array, magic: number[]) => head.length >= magic.length && magic.every((b, i) => head[i] === b);

/** The compression the first bytes of an export announce; a compressed format we do not read is refused by name. */
export function compressionOf(head: Uint8Array, file: string): Compression {
  if (startsWith(head, GZIP)) return 'gzip';
  if (startsWith(head, ZIP)) return 'zip';
  for (const o of OTHER) {
    // bzip2's "BZh" is followed by its block size, a digit 1-9: text that starts with "BZh" is not taken for it.
    const bzipSize = o.name !== 'bzip2' || (head[3] !== undefined && head[3] >= 0x31 && head[3] <= 0x39);
    if (startsWith(head, o.magic) && bzipSize) {
      throw new SourceError('WRONG_FORMAT', `${file}: is a ${o.name} archive; the connector reads CSV as it is, gzip (.csv.gz) or a zip holding one CSV — export it so, or unpack it first`, {
        file,
        setting: 'type',
      });
    }
  }
  return null;
}

const readP = promisify(read);

/** The first bytes of an opened export (fewer when it is shorter), read at position 0 without moving anything. */
export async function readHead(fd: number, bytes = 8): Promise<Buffer> {
  const buf = Buffer.alloc(bytes);
  const { bytesRead } = await readP(fd, buf, 0, bytes, 0);
  return buf.subarray(0, bytesRead);
}

/** A CSV's bytes, decompressed when the export is compressed. */
export interface CsvBytes {
  /** The CSV's bytes; the file's own bytes go through the meter (hash, size limit) as they are read. */
  bytes(): AsyncIterable<Buffer>;
  /** The CSV's bytes again from the start, without the meter (the rare path: the line of a bad byte). */
  again(): AsyncIterable<Buffer>;
  close(): void;
}

/** Open the CSV bytes of an export in the given compression. */
export async function openCsvBytes(input: OpenExport, compression: Compression, source: SourceConfig, meter: ByteMeter, chunkBytes: number): Promise<CsvBytes> {
  const { file } = input;
  if (compression === 'zip') return openZipped(input, source, meter, chunkBytes);
  const plain = (metered: boolean) => fileChunks(input, chunkBytes, metered ? meter : null);
  if (compression === null) return { bytes: () => plain(true), again: () => plain(false), close: () => {} };
  return {
    bytes: () => oneLevel(file, 'gzip file', gunzipped(file, source.limits, plain(true), chunkBytes)),
    again: () => oneLevel(file, 'gzip file', gunzipped(file, source.limits, plain(false), chunkBytes)),
    close: () => {},
  };
}

/**
 * The connector unpacks one level. What comes out of it must be the CSV: another archive inside (a .csv.gz in a
 * zip, a .csv.gz.gz, a workbook in a zip) is named as such, not left to the CSV checks, which would call its
 * bytes NUL-filled or UTF-16 and send the operator the wrong way.
 */
async function* oneLevel(file: string, outer: string, bytes: AsyncIterable<Buffer>, entry?: string): AsyncGenerator<Buffer> {
  let head: Buffer | null = Buffer.alloc(0);
  for await (const chunk of bytes) {
    if (head !== null) {
      head = Buffer.concat([head, chunk]);
      if (head.length < 8) continue;
      refuseInner(file, outer, head, entry);
      const first = head;
      head = null;
      yield first;
      continue;
    }
    yield chunk;
  }
  if (head !== null && head.length > 0) {
    refuseInner(file, outer, head, entry);
    yield head;
  }
}

function refuseInner(file: string, outer: string, head: Buffer, entry: string | undefined): void {
  const inner = startsWith(head, GZIP) ? 'gzip' : startsWith(head, ZIP) ? 'zip' : OTHER.find((o) => startsWith(head, o.magic))?.name;
  if (inner === undefined) return;
  const workbook = entry !== undefined && /\.xls[xm]$/i.test(entry);
  const what = workbook ? `an Excel workbook ("${entry}")` : `a ${inner} archive${entry !== undefined ? ` ("${entry}")` : ''}`;
  const fix = workbook
    ? 'put the workbook itself in the folder and set type: xlsx'
    : 'the connector unpacks one level: export a plain CSV, a .csv.gz or a zip holding one CSV';
  throw new SourceError('WRONG_FORMAT', `${file}: the ${outer} holds ${what}, not a CSV; ${fix}`, { file, setting: 'type' });
}

async function* fileChunks(input: OpenExport, chunkBytes: number, meter: ByteMeter | null): AsyncGenerator<Buffer> {
  const { file, fd } = input;
  // From the descriptor the read opened (open-file.ts): the bytes hashed and parsed are those of the file checked.
  const stream = fdReadStream(fd, { highWaterMark: chunkBytes });
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      meter?.add(chunk);
      yield chunk;
    }
  } catch (err) {
    if (err instanceof SourceError) throw err;
    const code = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'FILE_NOT_FOUND' : 'FILE_UNREADABLE';
    throw new SourceError(code, `${file}: ${(err as Error).message}`, { file }, err);
  } finally {
    stream.destroy();
  }
}

/**
 * A gzip file's bytes, inflated as they stream, held to the same limits as
 * an XLSX archive: the total, and (past 1 MiB) the ratio to the compressed
 * bytes zlib has taken in so far. (A gzip file's declared size, the last
 * four bytes, is its size modulo 4 GiB and may lie, so it is not trusted.)
 * zlib checks each member's CRC-32 and length, and reads concatenated members.
 */
async function* gunzipped(file: string, limits: SourceConfig['limits'], raw: AsyncIterable<Buffer>, chunkBytes: number): AsyncGenerator<Buffer> {
  const gunzip = createGunzip({ chunkSize: Math.max(64, chunkBytes) });
  let outBytes = 0;
  let feedError: unknown = null;
  // Feeds the compressed bytes in with backpressure; its own failures (file, meter) end the inflate.
  const feed = (async () => {
    try {
      for await (const chunk of raw) {
        if (gunzip.destroyed) return;
        if (!gunzip.write(chunk)) await drainedOrClosed(gunzip);
      }
      if (!gunzip.destroyed) gunzip.end();
    } catch (err) {
      feedError = err;
      gunzip.destroy(err as Error);
    }
  })();
  try {
    for await (const chunk of gunzip as AsyncIterable<Buffer>) {
      outBytes += chunk.length;
      checkTotal(file, 'the gzip file', outBytes, limits);
      checkRatio(file, 'the gzip file', outBytes, gunzip.bytesWritten, limits);
      yield chunk;
    }
  } catch (err) {
    throw gzipError(file, feedError ?? err);
  } finally {
    gunzip.destroy();
    await feed;
  }
  if (feedError) throw gzipError(file, feedError);
}

/** Resolves when a writable can take more, or is closed (the reader stopped early): never waits forever. */
function drainedOrClosed(w: NodeJS.WritableStream & { once(e: string, f: () => void): unknown; off(e: string, f: () => void): unknown }): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      w.off('drain', done);
      w.off('close', done);
      resolve();
    };
    w.once('drain', done);
    w.once('close', done);
  });
}

function gzipError(file: string, err: unknown): SourceError {
  if (err instanceof SourceError) return err;
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'Z_BUF_ERROR') {
    return new SourceError('TRUNCATED', `${file}: the gzip data ends early; the file is truncated (copied or downloaded before it was complete?)`, { file }, err);
  }
  return new SourceError('WRONG_FORMAT', `${file}: is damaged gzip data (${(err as Error)?.message ?? String(err)}); download or export it again`, { file, setting: 'type' }, err);
}

// Entries a zip tool adds beside the export: folders, macOS resource forks and Finder files.
const NOT_EXPORTS = /(^|\/)(__MACOSX\/|\.DS_Store$)|\/$/;

/**
 * A zip export: exactly one file (folders and macOS extras aside), read
 * through the XLSX archive reader, so that the same limits and checks hold
 * (entry count, declared sizes and ratio before inflating, each entry held
 * to its declared size while it inflates).
 */
async function openZipped(input: OpenExport, source: SourceConfig, meter: ByteMeter, chunkBytes: number): Promise<CsvBytes> {
  const { file, fd, size } = input;
  // Loaded only for zip exports, as for XLSX sources.
  const { meterWholeFile } = await import('./xlsx.js');
  const { WorkbookArchive } = await import('./xlsx/archive.js');
  await meterWholeFile(file, fd, meter);
  const archive = await WorkbookArchive.open(file, fd, size, chunkBytes).catch((err: unknown) => {
    // The archive reader speaks of workbooks; here the file was to be a CSV.
    const why = err instanceof SourceError && typeof err.context.reason === 'string' ? err.context.reason : (err as Error)?.message;
    throw new SourceError(
      'WRONG_FORMAT',
      `${file}: starts like a zip archive but is not a valid one (${why}); a zip export must hold one CSV, and an XLSX workbook needs type: xlsx`,
      { file, setting: 'type' },
      err,
    );
  });
  try {
    const ctx = { file, setting: 'type' };
    const entries = archive.entries();
    if (entries.some((e) => e.name.toLowerCase() === '[content_types].xml')) {
      throw new SourceError('WRONG_FORMAT', `${file}: is an XLSX workbook (a zip archive with [Content_Types].xml), not CSV; set type: xlsx`, ctx);
    }
    checkArchiveSizes(file, entries, source.limits);
    const files = entries.filter((e) => !NOT_EXPORTS.test(e.name));
    if (files.length !== 1) {
      const listed = files.slice(0, 5).map((e) => JSON.stringify(e.name)).join(', ');
      throw new SourceError(
        'WRONG_FORMAT',
        files.length === 0
          ? `${file}: is a zip archive with no file in it; a zip export must hold exactly one CSV`
          : `${file}: is a zip archive of ${files.length} files (${listed}${files.length > 5 ? ', …' : ''}); a zip export must hold exactly one CSV`,
        ctx,
      );
    }
    const name = files[0]!.name;
    const inner = () => oneLevel(file, 'zip archive', zipEntry(file, archive.bytes(name)), name);
    return { bytes: inner, again: inner, close: () => archive.close() };
  } catch (err) {
    archive.close();
    throw err;
  }
}

async function* zipEntry(file: string, bytes: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
  try {
    yield* bytes;
  } catch (err) {
    if (err instanceof SourceError) throw err;
    throw new SourceError('WRONG_FORMAT', `${file}: the CSV in the zip archive could not be inflated (${(err as Error)?.message ?? String(err)}); download or export it again`, { file, setting: 'type' }, err);
  }
}
