import { isUtf8 } from 'node:buffer';

/**
 * Validates UTF-8 bytes chunk by chunk (native `isUtf8`), carrying a
 * character split across a chunk boundary into the next check. Used instead
 * of decoding when the text is UTF-8, because csv-parse decodes bytes itself.
 */
export class Utf8Checker {
  private tail: Buffer | null = null;

  /** False when the bytes so far are not valid UTF-8. */
  check(chunk: Buffer): boolean {
    const buf = this.tail ? Buffer.concat([this.tail, chunk]) : chunk;
    let cut = buf.length;
    let i = buf.length - 1;
    while (i >= 0 && buf.length - i <= 3 && (buf[i]! & 0xc0) === 0x80) i--;
    if (i >= 0 && buf[i]! >= 0xc0) {
      const need = buf[i]! >= 0xf0 ? 4 : buf[i]! >= 0xe0 ? 3 : 2;
      if (buf.length - i < need) cut = i;
    }
    this.tail = cut < buf.length ? Buffer.from(buf.subarray(cut)) : null;
    return isUtf8(cut === buf.length ? buf : buf.subarray(0, cut));
  }

  /** False when the input ended inside a character. */
  end(): boolean {
    return this.tail === null;
  }
}
