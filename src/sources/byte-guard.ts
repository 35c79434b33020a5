import { isAscii } from 'node:buffer';
import { SourceError } from '../model/source-error.js';
import { Utf8Checker } from './utf8-check.js';

// Encodings whose text could be UTF-8 read wrongly: every UTF-8 byte sequence decodes to something in them.
const LEGACY = new Set(['cp932', 'shift_jis', 'euc-jp', 'euc-kr']);

/**
 * Checks of a CSV's raw bytes that no parser or decoder makes, for files a
 * careless read would publish garbled:
 * - a NUL byte anywhere (the head check sees only the first bytes): text
 *   never holds one, but a file a crash left zero-filled does, and rows
 *   lost in such a block would be deleted;
 * - a file in a legacy encoding (cp932, EUC) that is entirely valid UTF-8
 *   with non-ASCII characters: a POS updated to write UTF-8 while the
 *   source still says cp932. Every byte decodes in cp932, so nothing else
 *   notices, and every name would be published as mojibake. Real cp932 or
 *   EUC text with kana or kanji is practically never valid UTF-8.
 */
export class ByteGuard {
  private utf8: Utf8Checker | null;
  private nonAscii = false;
  private offset = 0;

  constructor(
    private readonly file: string,
    /** The CSV's bytes again from the start (decompressed when the export is), for the line of a bad byte. */
    private readonly again: () => AsyncIterable<Buffer>,
    /** The encoding the text is decoded with (after a BOM was read). */
    private readonly encoding: string,
  ) {
    this.utf8 = LEGACY.has(encoding) ? new Utf8Checker() : null;
  }

  /** Check the next raw chunk. */
  async check(chunk: Buffer): Promise<void> {
    const start = this.offset;
    this.offset += chunk.length;
    if (!this.encoding.startsWith('utf-16')) {
      const nul = chunk.indexOf(0);
      if (nul !== -1) {
        const line = await lineAt(this.again(), start + nul);
        throw new SourceError(
          'MALFORMED_CSV',
          `${this.file}: a NUL byte at line ${line}: text never holds one, so the file is damaged (zero-filled by a crash while it was written?) or binary — export it again`,
          { file: this.file, line },
        );
      }
    }
    if (this.utf8 === null) return;
    if (!this.nonAscii && !isAscii(chunk)) this.nonAscii = true;
    // Not UTF-8 (as real legacy text with kana or kanji never is): nothing more to look for.
    if (!this.utf8.check(chunk)) this.utf8 = null;
  }

  /** True while the bytes so far are valid UTF-8 with non-ASCII characters, under a legacy encoding. */
  looksLikeUtf8(): boolean {
    return this.utf8 !== null && this.nonAscii;
  }

  /** The refusal of a legacy-encoded source whose bytes are UTF-8 (`line`: where the decoder gave up, if it did). */
  utf8Refusal(line?: number): SourceError {
    return new SourceError(
      'BAD_ENCODING',
      `${this.file}: is UTF-8 text, but the source's encoding is ${this.encoding}: read so, every non-ASCII character would be garbled; set encoding: utf-8 (or auto)`,
      { file: this.file, setting: 'encoding', ...(line !== undefined ? { line } : {}) },
    );
  }

  /** At the end of the file: refuse a legacy-encoded source whose bytes were UTF-8 all along. */
  end(): void {
    if (this.looksLikeUtf8() && this.utf8!.end()) throw this.utf8Refusal();
  }
}

/** The 1-based line of byte `offset` of `bytes` (a rare path: the file is read again from the start). */
async function lineAt(bytes: AsyncIterable<Buffer>, offset: number): Promise<number> {
  let line = 1;
  let at = 0;
  for await (const whole of bytes) {
    if (at >= offset) break;
    const chunk = whole.subarray(0, Math.max(0, offset - at));
    at += whole.length;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) line++;
  }
  return line;
}
