import { createRequire } from 'node:module';
import type Iconv from 'iconv-lite';
import type { SourceEncoding } from './config.js';
import { SourceError } from '../model/source-error.js';

const require = createRequire(import.meta.url);
let iconvLib: typeof Iconv | null = null;

/** iconv-lite, loaded at the first text that is not plain UTF-8 (issue 18: some 8 MB an idle daemon need not hold). */
export function iconvLite(): typeof Iconv {
  return (iconvLib ??= require('iconv-lite') as typeof Iconv);
}

const BOMS: Array<{ bytes: number[]; encoding: 'utf-8' | 'utf-16le' | 'utf-16be' }> = [
  { bytes: [0xef, 0xbb, 0xbf], encoding: 'utf-8' },
  { bytes: [0xff, 0xfe], encoding: 'utf-16le' },
  { bytes: [0xfe, 0xff], encoding: 'utf-16be' },
];

/** The encoding a byte order mark at the start of `head` announces, if any. */
export function bomEncoding(head: Uint8Array): 'utf-8' | 'utf-16le' | 'utf-16be' | null {
  for (const bom of BOMS) {
    if (head.length >= bom.bytes.length && bom.bytes.every((b, i) => head[i] === b)) return bom.encoding;
  }
  return null;
}

// iconv-lite's shift_jis table is Windows' cp932 (NEC and IBM extensions such
// as ① ㈱ 髙 included), which is what "Shift_JIS" exports really are.
const ICONV_NAME: Record<Exclude<SourceEncoding, 'auto'>, string> = {
  'utf-8': 'utf-8',
  cp932: 'cp932',
  shift_jis: 'cp932',
  'euc-jp': 'euc-jp',
  'euc-kr': 'euc-kr',
  'utf-16le': 'utf-16le',
  'utf-16be': 'utf-16be',
};

/**
 * Streaming bytes → text for one file. Multi-byte characters split across
 * chunks are carried over by iconv-lite's decoder. A replacement character in
 * the output means invalid bytes for the configured encoding (or mojibake):
 * that is a file-level BAD_ENCODING error, never silently kept.
 */
export class StreamDecoder {
  private decoder: ReturnType<typeof Iconv.getDecoder> | null = null;
  private pending: Buffer | null = null;
  private linesSeen = 1;
  private highSurrogate = '';
  private bytesIn = 0;
  /** The encoding used, after BOM detection for `auto`. */
  encoding: string;

  constructor(
    private readonly configured: SourceEncoding,
    private readonly file: string,
  ) {
    this.encoding = configured === 'auto' ? 'utf-8' : configured;
    if (configured !== 'auto') this.decoder = iconvLite().getDecoder(ICONV_NAME[configured], { stripBOM: true });
  }

  /** Decode the next chunk; may return '' while waiting for enough bytes to see a BOM. */
  write(chunk: Buffer): string {
    this.bytesIn += chunk.length;
    if (this.decoder === null) {
      const head = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
      if (head.length < 3) {
        this.pending = head;
        return '';
      }
      this.pending = null;
      this.start(head);
      return this.check(this.decoder!.write(head));
    }
    return this.check(this.decoder.write(chunk));
  }

  /**
   * Flush the decoder; an incomplete character at the end of the file is an encoding error. For UTF-16 it is
   * proof of a cut-off file (an odd byte count, or a surrogate pair missing its second half), which iconv-lite
   * drops silently: the file is refused as TRUNCATED so that the rows it lost are never read as deleted.
   */
  end(): string {
    let text: string;
    if (this.decoder === null) {
      this.start(this.pending ?? Buffer.alloc(0));
      text = (this.pending ? this.decoder!.write(this.pending) : '') + (this.decoder!.end() ?? '');
    } else {
      text = this.decoder.end() ?? '';
    }
    if (this.encoding.startsWith('utf-16')) {
      const tail = this.highSurrogate + text;
      const last = tail.charCodeAt(tail.length - 1);
      if (this.bytesIn % 2 === 1 || (last >= 0xd800 && last <= 0xdbff)) {
        throw new SourceError(
          'TRUNCATED',
          `${this.file}: ends in the middle of a ${this.encoding.toUpperCase()} character (${this.bytesIn} bytes); the file was cut off while it was written or copied. Nothing from it is used: let the export finish, or export again`,
          { file: this.file, line: this.linesSeen + countNewlines(text, text.length) },
        );
      }
    }
    return this.check(text, true);
  }

  private start(head: Buffer): void {
    const bom = bomEncoding(head);
    this.encoding = bom ?? 'utf-8';
    this.decoder = iconvLite().getDecoder(this.encoding, { stripBOM: true });
  }

  private check(decoded: string, last = false): string {
    // A lone high surrogate at the end would break when the text is turned into bytes; keep it for the next chunk.
    let text = this.highSurrogate + decoded;
    this.highSurrogate = '';
    const end = text.charCodeAt(text.length - 1);
    if (!last && end >= 0xd800 && end <= 0xdbff) {
      this.highSurrogate = text.slice(-1);
      text = text.slice(0, -1);
    }
    const at = this.encoding.startsWith('utf-16') ? firstInvalid(text, last) : text.indexOf('\uFFFD');
    if (at !== -1) {
      const line = this.linesSeen + countNewlines(text, at);
      throw new SourceError(
        'BAD_ENCODING',
        `${this.file}: bytes that are not valid ${this.encoding} near line ${line}; check the source's encoding setting`,
        { file: this.file, line, setting: 'encoding' },
      );
    }
    if (text.length > 0) this.linesSeen += countNewlines(text, text.length);
    return text;
  }
}

/** The first U+FFFD or unpaired surrogate (UTF-16 decoders pass those through), or -1. */
function firstInvalid(text: string, last: boolean): number {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0xfffd) return i;
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) i++;
      else if (i + 1 < text.length || last) return i;
    } else if (c >= 0xdc00 && c <= 0xdfff) return i;
  }
  return -1;
}

function countNewlines(text: string, end: number): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < end; i = text.indexOf('\n', i + 1)) n++;
  return n;
}
