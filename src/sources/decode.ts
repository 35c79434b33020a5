import iconv from 'iconv-lite';
import type { SourceEncoding } from './config.js';
import { SourceError } from '../model/source-error.js';

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
  private decoder: ReturnType<typeof iconv.getDecoder> | null = null;
  private pending: Buffer | null = null;
  private linesSeen = 1;
  private highSurrogate = '';
  /** The encoding used, after BOM detection for `auto`. */
  encoding: string;

  constructor(
    private readonly configured: SourceEncoding,
    private readonly file: string,
  ) {
    this.encoding = configured === 'auto' ? 'utf-8' : configured;
    if (configured !== 'auto') this.decoder = iconv.getDecoder(ICONV_NAME[configured], { stripBOM: true });
  }

  /** Decode the next chunk; may return '' while waiting for enough bytes to see a BOM. */
  write(chunk: Buffer): string {
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

  /** Flush the decoder; an incomplete character at the end of the file is an encoding error. */
  end(): string {
    if (this.decoder === null) {
      this.start(this.pending ?? Buffer.alloc(0));
      const text = this.pending ? this.decoder!.write(this.pending) : '';
      return this.check(text + (this.decoder!.end() ?? ''), true);
    }
    return this.check(this.decoder.end() ?? '', true);
  }

  private start(head: Buffer): void {
    const bom = bomEncoding(head);
    this.encoding = bom ?? 'utf-8';
    this.decoder = iconv.getDecoder(this.encoding, { stripBOM: true });
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
    const at = text.indexOf('\uFFFD');
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

function countNewlines(text: string, end: number): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1 && i < end; i = text.indexOf('\n', i + 1)) n++;
  return n;
}
