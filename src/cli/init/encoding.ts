import iconv from 'iconv-lite';
import { isUtf8 } from 'node:buffer';
import { detectAll } from 'jschardet';
import { bomEncoding } from '../../sources/decode.js';

/** How sure a guess is, said in the config it goes into. */
export type Certainty = 'certain' | 'high' | 'medium' | 'low';

/** The encoding `init` proposes, with why and how sure, and what else it could be. */
export interface EncodingGuess {
  encoding: 'utf-8' | 'cp932' | 'euc-jp' | 'euc-kr' | 'utf-16le' | 'utf-16be';
  certainty: Certainty;
  why: string;
  /** Other encodings the bytes also read cleanly in, best first. */
  alternatives: string[];
}

const LEGACY = ['cp932', 'euc-jp', 'euc-kr'] as const;
type Legacy = (typeof LEGACY)[number];

/** Character counts of one decoding, by the script a shop's export would use. */
interface Profile {
  bad: number;
  nonAscii: number;
  kana: number;
  halfKana: number;
  /** ｰ ﾞ ﾟ among the half-width katakana. */
  halfKanaMarks: number;
  kanji: number;
  hangul: number;
  /** EUC-KR: characters only in Microsoft's extension (CP949), outside KS X 1001, which Korean exports rarely need. */
  uhcOnly: number;
  /** Characters no product list is written in: Hangul jamo alone, Greek/Cyrillic/box drawing in CJK text, private use. */
  odd: number;
}

function profile(text: string, bytes?: Buffer): Profile {
  const p: Profile = { bad: 0, nonAscii: 0, kana: 0, halfKana: 0, halfKanaMarks: 0, kanji: 0, hangul: 0, uhcOnly: 0, odd: 0 };
  for (const ch of text) {
    const c = ch.codePointAt(0)!;
    if (c < 0x80) continue;
    p.nonAscii++;
    if (c === 0xfffd) p.bad++;
    else if ((c >= 0x3040 && c <= 0x30ff) || c === 0x30fc) p.kana++;
    else if (c >= 0xff61 && c <= 0xff9f) {
      p.halfKana++;
      if (c === 0xff70 || c === 0xff9e || c === 0xff9f) p.halfKanaMarks++;
    }
    else if (c >= 0x4e00 && c <= 0x9fff) p.kanji++;
    else if (c >= 0xac00 && c <= 0xd7a3) p.hangul++;
    else if ((c >= 0x3130 && c <= 0x318f) || (c >= 0x0370 && c <= 0x04ff) || (c >= 0x2500 && c <= 0x257f) || (c >= 0xe000 && c <= 0xf8ff)) p.odd++;
  }
  if (bytes) {
    // Double bytes with a lead or trail below 0xA1 exist only in CP949's extension.
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i]!;
      if (b < 0x81) continue;
      const t = bytes[i + 1] ?? 0;
      if (b < 0xa1 || t < 0xa1) p.uhcOnly++;
      i++;
    }
  }
  return p;
}

/**
 * Our own fallback when jschardet names none of the three: how much a clean
 * decoding looks like a shop's text in that encoding's language, 0..1.
 * Old POS systems write product names in half-width katakana only; those
 * bytes are also valid EUC double bytes, but the long-vowel and voicing
 * marks (ｰ ﾞ ﾟ) that such names are full of give CP932 away.
 */
function plausibility(enc: Legacy, p: Profile): number {
  if (p.nonAscii === 0) return 1;
  const n = p.nonAscii;
  if (enc === 'euc-kr') return Math.max(0, (p.hangul - 2 * p.odd - 2 * p.uhcOnly - p.kanji) / n) * 0.9;
  const kanjiOnly = p.kana === 0 && p.halfKana === 0 ? 0.5 : 1;
  const halfKana = p.halfKanaMarks > 0 ? p.halfKana : 0;
  return Math.max(0, (p.kana + halfKana + p.kanji * kanjiOnly - 2 * p.odd) / n);
}

function decodeLegacy(bytes: Buffer, enc: Legacy): string {
  return iconv.decode(bytes, enc);
}

/** A whole multi-byte character may be cut at the end of a sample; drop the last partial line. */
function wholeLines(bytes: Buffer, complete: boolean): Buffer {
  if (complete) return bytes;
  const nl = bytes.lastIndexOf(0x0a);
  return nl > 0 ? bytes.subarray(0, nl + 1) : bytes;
}

/** UTF-16 without a byte order mark: ASCII text has a NUL in every other byte. */
function utf16WithoutBom(bytes: Buffer): 'utf-16le' | 'utf-16be' | null {
  const n = Math.min(bytes.length - (bytes.length % 2), 4096);
  if (n < 8) return null;
  let evenNul = 0;
  let oddNul = 0;
  for (let i = 0; i < n; i += 2) {
    if (bytes[i] === 0) evenNul++;
    if (bytes[i + 1] === 0) oddNul++;
  }
  const pairs = n / 2;
  if (oddNul > pairs * 0.3 && evenNul < pairs * 0.05) return 'utf-16le';
  if (evenNul > pairs * 0.3 && oddNul < pairs * 0.05) return 'utf-16be';
  return null;
}

/**
 * Guess a CSV export's encoding from its first bytes, among the encodings the
 * connector reads, and say why and how sure. In order: a byte order mark
 * (certain); UTF-16 by its NUL bytes; UTF-8 when the bytes are valid UTF-8
 * (high with non-ASCII text: other encodings are almost never valid UTF-8);
 * else CP932, EUC-JP or EUC-KR by decoding errors, then by what each clean
 * decoding looks like (plausibility above). `complete`: the bytes are the
 * whole file (else the last partial line is left out).
 *
 * Chosen: our own checks (BOM, UTF-16 NULs, UTF-8 validity, which of the
 * three decode without errors), then jschardet 4 (a port of Python's
 * chardet 7, 0BSD, maintained) restricted to the clean candidates to rank
 * them by its language model. Tried on short shop-style samples: chardet
 * (npm) picked windows-1252 for short Japanese files, encoding-japanese
 * does not know EUC-KR, jschardet restricted to these encodings ranked
 * 26 of 28 right and named none for the other two (half-width katakana
 * only), where our character statistics decide at lower certainty. Its
 * confidences are small for short text, so certainty is taken from the
 * margin between its first and second, and said in the config.
 */
export function guessEncoding(sample: Buffer, complete: boolean): EncodingGuess {
  const bom = bomEncoding(sample);
  if (bom) return { encoding: bom, certainty: 'certain', why: `the file starts with a ${bom.toUpperCase()} byte order mark`, alternatives: [] };
  const utf16 = utf16WithoutBom(sample);
  if (utf16) return { encoding: utf16, certainty: 'high', why: `no byte order mark, but every ${utf16 === 'utf-16le' ? 'second' : 'first'} byte of its ASCII text is NUL, as in ${utf16.toUpperCase()}`, alternatives: [] };
  const bytes = wholeLines(sample, complete);
  let nonAscii = 0;
  for (const b of bytes) if (b >= 0x80) nonAscii++;
  if (nonAscii === 0) return { encoding: 'utf-8', certainty: 'high', why: 'the bytes read are plain ASCII, the same in every encoding the connector reads; utf-8 also reads any later non-ASCII text if it is UTF-8', alternatives: [] };
  if (isUtf8(bytes)) return { encoding: 'utf-8', certainty: 'high', why: `valid UTF-8 with ${nonAscii} non-ASCII bytes, which text in CP932, EUC-JP or EUC-KR almost never is`, alternatives: [] };

  const decoded = LEGACY.map((enc) => ({ enc, p: profile(decodeLegacy(bytes, enc), enc === 'euc-kr' ? bytes : undefined) }));
  const clean = decoded.filter((d) => d.p.bad === 0);
  if (clean.length === 0) {
    const best = [...decoded].sort((a, b) => a.p.bad - b.p.bad)[0]!;
    return {
      encoding: best.enc,
      certainty: 'low',
      why: `not valid UTF-8, and not clean ${LEGACY.join(', ')} either (${best.p.bad} undecodable characters in the best, ${best.enc}); the file may be damaged or in another encoding`,
      alternatives: decoded.filter((d) => d !== best).map((d) => d.enc),
    };
  }
  const describe = (p: Profile) => `${p.kana} kana, ${p.halfKana} half-width kana, ${p.kanji} kanji, ${p.hangul} Hangul in ${p.nonAscii} non-ASCII characters`;
  if (clean.length === 1) {
    const only = clean[0]!;
    return { encoding: only.enc, certainty: 'high', why: `not valid UTF-8; only ${only.enc} decodes it without errors (${describe(only.p)})`, alternatives: [] };
  }
  // Several decode cleanly: jschardet's language model ranks them (restricted to these, so it cannot wander off to windows-1252).
  const ranked = rankWithModel(bytes, clean.map((c) => c.enc));
  const cleanNames = clean.map((c) => c.enc).join(', ');
  if (ranked.length > 0) {
    const [top, next] = ranked;
    const best = clean.find((c) => c.enc === top!.enc)!;
    const clear = next === undefined || next.confidence * 3 <= top!.confidence;
    const certainty: Certainty = clear && top!.confidence >= 0.1 ? 'high' : clear ? 'medium' : 'low';
    const odds = ranked.map((r) => `${r.enc} ${r.confidence.toFixed(2)}`).join(', ');
    return {
      encoding: best.enc,
      certainty,
      why: `not valid UTF-8; ${cleanNames} all decode it without errors; jschardet's language model ranks ${odds} (${describe(best.p)})`,
      alternatives: clean.filter((c) => c !== best).map((c) => c.enc),
    };
  }
  const scored = clean.map((c) => ({ ...c, score: plausibility(c.enc, c.p) })).sort((a, b) => b.score - a.score);
  const [best, second] = [scored[0]!, scored[1]!];
  const certainty: Certainty = best.score - second.score >= 0.4 ? 'medium' : 'low';
  return {
    encoding: best.enc,
    certainty,
    why: `not valid UTF-8; ${cleanNames} all decode it without errors and jschardet's model names none of them; by the characters each gives, ${best.enc} reads as the most likely text (${describe(best.p)}; ${scored.map((s) => `${s.enc} ${s.score.toFixed(2)}`).join(', ')})`,
    alternatives: scored.slice(1).map((s) => s.enc),
  };
}

const MODEL_NAMES: Record<string, Legacy> = { cp932: 'cp932', shift_jis: 'cp932', 'euc-jp': 'euc-jp', 'euc-kr': 'euc-kr', cp949: 'euc-kr' };

/** jschardet's ranking of the candidates (its names mapped to ours), best first; empty when it names none. */
function rankWithModel(bytes: Buffer, candidates: Legacy[]): Array<{ enc: Legacy; confidence: number }> {
  // cp1252 is jschardet's answer when nothing matches; allowed (and then ignored) so that it does not warn on the console.
  const allowed = ['cp1252', ...candidates.flatMap((c) => Object.keys(MODEL_NAMES).filter((k) => MODEL_NAMES[k] === c))];
  const out: Array<{ enc: Legacy; confidence: number }> = [];
  for (const r of detectAll(bytes, { detectEncodings: allowed, minimumThreshold: 0 })) {
    const enc = r.encoding ? MODEL_NAMES[r.encoding.toLowerCase()] : undefined;
    if (enc && !out.some((o) => o.enc === enc)) out.push({ enc, confidence: r.confidence });
  }
  return out;
}
