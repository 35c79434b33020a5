import type { ByteShortcut } from './archive.js';
/**
 * The fast path of a sheet's read (issue 18): nearly every cell a workbook
 * writer produces is `<c r="B2" t="s" s="1"><v>12</v></c>` (or `<c …/>`), and
 * nearly every shared string `<si><t>text</t></si>`. These read such an
 * element straight off the part, without the general scanner's work per tag.
 * They take only what the scanner would read alike (no prefix, only the
 * attributes r, t and s, double-quoted and plain, text without references,
 * CR, `>` or characters XML refuses) and leave anything else to it (-1):
 * inline and rich text, formulas, escapes, other attributes. A whole plain
 * row is read off the part's bytes before they are decoded (sheet.ts, with
 * ASCII only: the readers ending in `At` and taking a Uint8Array), and says
 * MORE when the bytes end inside it; a plain strings item, and a lone plain
 * cell amid others the scanner reads, off the decoded text. Each leaves the
 * state the scanner's events would have left; a lone plain cell is replayed
 * through the same handler code as the scanner's events. Nothing here reads
 * past the end of the text or bytes: such a read gives NaN or undefined, and
 * throws the optimised code away.
 */

/** A cell as read by scanPlainCell. */
export interface PlainCell {
  r: string | undefined;
  t: string | undefined;
  s: string | undefined;
  /** The `<v>` text; null for an empty element `<c …/>`. */
  v: string | null;
}

const cellTag = new Int32Array(6);

/** Read a plain cell at `lt` into `out`; the index after it, or -1 to leave it to the scanner. */
export function scanPlainCell(x: string, lt: number, out: PlainCell): number {
  if (x.charCodeAt(lt + 1) !== 0x63) return -1; // c
  const after = scanPlainCellTag(x, lt, cellTag);
  if (after === 0) return -1;
  const to = after > 0 ? plainValueEnd(x, after) : 0;
  if (to < 0) return -1;
  out.r = cellTag[0]! >= 0 ? x.slice(cellTag[0], cellTag[1]) : undefined;
  out.t = cellTag[2]! >= 0 ? x.slice(cellTag[2], cellTag[3]) : undefined;
  out.s = cellTag[4]! >= 0 ? x.slice(cellTag[4], cellTag[5]) : undefined;
  if (after < 0) {
    out.v = null;
    return -after - 1;
  }
  out.v = x.slice(after + 3, to);
  return to + 8;
}

/**
 * After a plain cell's start tag: the index of the `<` of `</v></c>` that
 * ends its plain `<v>` text (which starts 3 after `after`), or -1.
 */
export function plainValueEnd(x: string, after: number): number {
  if (after + 2 >= x.length) return -1;
  if (x.charCodeAt(after) !== 0x3c || x.charCodeAt(after + 1) !== 0x76 || x.charCodeAt(after + 2) !== 0x3e) return -1; // <v>
  const to = plainTextEnd(x, after + 3);
  // </v></c> by its characters: a startsWith per cell cost more than the rest of the cell's checks.
  if (to < 0 || to + 7 >= x.length) return -1;
  return x.charCodeAt(to + 1) === 0x2f &&
    x.charCodeAt(to + 2) === 0x76 &&
    x.charCodeAt(to + 3) === 0x3e &&
    x.charCodeAt(to + 4) === 0x3c &&
    x.charCodeAt(to + 5) === 0x2f &&
    x.charCodeAt(to + 6) === 0x63 &&
    x.charCodeAt(to + 7) === 0x3e
    ? to
    : -1;
}

/**
 * Read a plain shared string `<si><t>…</t></si>` (the `<t>` may say
 * `xml:space="preserve"`) at `lt`, its text into `out.text`; the index after
 * it, or -1 to leave it to the scanner.
 */
export function scanPlainItem(x: string, lt: number, out: { text: string; escaped: boolean }): number {
  const n = x.length;
  if (lt + 6 >= n) return -1;
  if (x.charCodeAt(lt + 1) !== 0x73 || x.charCodeAt(lt + 2) !== 0x69 || x.charCodeAt(lt + 3) !== 0x3e || x.charCodeAt(lt + 4) !== 0x3c || x.charCodeAt(lt + 5) !== 0x74) return -1; // <si><t
  let j = lt + 6;
  if (x.charCodeAt(j) === 0x20) {
    if (!x.startsWith(' xml:space="preserve"', j)) return -1;
    j += 21;
  }
  if (j >= n || x.charCodeAt(j) !== 0x3e) return -1;
  const from = j + 1;
  // plainTextEnd, noting on the way whether an _xHHHH_ escape may be there (most items have no _ at all).
  let under = false;
  let to = from;
  for (; to < n; to++) {
    const c = x.charCodeAt(to);
    if (c === 0x3c) break;
    if (c < 0x20 || c === 0x26 || c === 0x3e || c >= 0xfffe) return -1;
    if (c === 0x5f) under = true;
  }
  if (to + 8 >= n) return -1;
  if (
    x.charCodeAt(to + 1) !== 0x2f ||
    x.charCodeAt(to + 2) !== 0x74 ||
    x.charCodeAt(to + 3) !== 0x3e ||
    x.charCodeAt(to + 4) !== 0x3c ||
    x.charCodeAt(to + 5) !== 0x2f ||
    x.charCodeAt(to + 6) !== 0x73 ||
    x.charCodeAt(to + 7) !== 0x69 ||
    x.charCodeAt(to + 8) !== 0x3e
  ) {
    return -1; // </t></si>
  }
  out.text = x.slice(from, to);
  out.escaped = under;
  return to + 9;
}

/** Where scanPlainItemAt found a plain item's text: x[from, to), whether it holds a byte beyond ASCII, and whether an _xHHHH_ escape may be in it. */
export interface PlainSpan {
  from: number;
  to: number;
  nonAscii: boolean;
  escaped: boolean;
}

/**
 * scanPlainItem in a part's bytes: a plain shared string at `lt`, where its
 * text is into `out`; the index after it, -1, or MORE. Its text may be any
 * UTF-8 (the caller has had it checked) but for what the scanner reads
 * otherwise: controls, `&`, `<`, `>`, U+FFFE and U+FFFF.
 */
export function scanPlainItemAt(x: Buffer, lt: number, out: PlainSpan): number {
  const n = x.length;
  if (lt + 6 >= n) return MORE;
  if (x[lt] !== 0x3c || x[lt + 1] !== 0x73 || x[lt + 2] !== 0x69 || x[lt + 3] !== 0x3e || x[lt + 4] !== 0x3c || x[lt + 5] !== 0x74) return -1; // <si><t
  let j = lt + 6;
  if (x[j] === 0x20) {
    if (j + 21 >= n) return MORE;
    for (let k = 0; k < 21; k++) if (x[j + k] !== PRESERVE.charCodeAt(k)) return -1;
    j += 21;
  }
  if (j >= n) return MORE;
  if (x[j] !== 0x3e) return -1;
  const from = j + 1;
  // Whether an _xHHHH_ escape may be there (most items have no _ at all), and whether all is ASCII.
  let under = false;
  let ascii = true;
  let to = from;
  for (; to < n; to++) {
    const c = x[to]!;
    if (c === 0x3c) break;
    if (c < 0x20 || c === 0x26 || c === 0x3e) return -1;
    if (c === 0x5f) under = true;
    else if (c >= 0x80) {
      ascii = false;
      // U+FFFE and U+FFFF (EF BF BE, EF BF BF): characters XML refuses.
      if (c === 0xef && to + 2 < n && x[to + 1] === 0xbf && x[to + 2]! >= 0xbe) return -1;
    }
  }
  if (to + 8 >= n) return MORE;
  if (x[to + 1] !== 0x2f || x[to + 2] !== 0x74 || x[to + 3] !== 0x3e || x[to + 4] !== 0x3c || x[to + 5] !== 0x2f || x[to + 6] !== 0x73 || x[to + 7] !== 0x69 || x[to + 8] !== 0x3e) {
    return -1; // </t></si>
  }
  out.from = from;
  out.to = to;
  out.nonAscii = !ascii;
  out.escaped = under;
  return to + 9;
}

const PRESERVE = ' xml:space="preserve"';

/**
 * The index of the `<` that ends plain text from `from`: text the scanner
 * hands on as it is written. -1 when there is none in `x` yet or the text
 * holds a control character (tab, LF and CR included), `&`, `>` or
 * U+FFFE/U+FFFF.
 */
export function plainTextEnd(x: string, from: number): number {
  // One pass, not indexOf then a check of what it passed: a cell's value is a few characters, and the call cost more.
  const n = x.length;
  for (let q = from; q < n; q++) {
    const c = x.charCodeAt(q);
    if (c === 0x3c) return q;
    if (c < 0x20 || c === 0x26 || c === 0x3e || c >= 0xfffe) return -1;
  }
  return -1;
}

/** Attributes of a plain row past which the scanner reads it (writers give r, spans, ht, customHeight, x14ac:dyDescent). */
export const MAX_ROW_ATTRIBUTES = 8;

/** What the byte readers below return when the bytes end before they could tell (the rest may come with the next chunk). */
export const MORE = -2;

/**
 * The end of a plain row's start tag `<row …>` at `lt` in a part's bytes:
 * the index after its `>`, -1 to leave the row to the scanner, or MORE.
 * Its attributes are taken as the scanner would read them only when plain:
 * double-quoted, printable ASCII without `&` or `<`, names of letters and
 * digits with at most one prefix, none twice. `names` (2 ×
 * MAX_ROW_ATTRIBUTES, reused) receives each name's start and end; `r`
 * receives the start and end of the `r` value ([-1, -1] when there is none):
 * no string is made.
 */
export function scanPlainRowTag(x: Uint8Array, lt: number, names: Int32Array, r: Int32Array): number {
  const n = x.length;
  if (lt + 4 >= n) return MORE;
  if (x[lt] !== 0x3c || x[lt + 1] !== 0x72 || x[lt + 2] !== 0x6f || x[lt + 3] !== 0x77) return -1; // <row
  r[0] = -1;
  r[1] = -1;
  let count = 0;
  let j = lt + 4;
  for (;;) {
    if (j >= n) return MORE;
    const k = x[j]!;
    if (k === 0x3e) return j + 1; // >
    if (k !== 0x20 || count === MAX_ROW_ATTRIBUTES) return -1;
    const from = j + 1;
    let q = from;
    let colon = false;
    while (q < n) {
      const c = x[q]!;
      const letter = (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
      if (letter || (c >= 0x30 && c <= 0x39 && q > from && x[q - 1] !== 0x3a)) q++;
      else if (c === 0x3a && !colon && q > from) {
        colon = true;
        q++;
      } else break;
    }
    // A name starts with a letter and does not end with the prefix's colon; then =" at once.
    if (q + 1 >= n) return MORE;
    const first = x[from]!;
    if (q === from || !((first >= 0x61 && first <= 0x7a) || (first >= 0x41 && first <= 0x5a)) || x[q - 1] === 0x3a) return -1;
    if (x[q] !== 0x3d || x[q + 1] !== 0x22) return -1;
    for (let m = 0; m < count; m++) if (sameBytes(x, names[2 * m]!, names[2 * m + 1]!, from, q)) return -1; // twice: the scanner refuses it
    names[2 * count] = from;
    names[2 * count + 1] = q;
    count++;
    const close = plainAttributeEndAt(x, q + 2);
    if (close < 0) return close;
    if (q === from + 1 && first === 0x72) {
      r[0] = q + 2;
      r[1] = close;
    }
    j = close + 1;
  }
}

/** plainAttributeEnd in a part's bytes (ASCII only), or MORE. */
export function plainAttributeEndAt(x: Uint8Array, from: number): number {
  const n = x.length;
  for (let q = from; q < n; q++) {
    const c = x[q]!;
    if (c === 0x22) return q;
    if (c < 0x20 || c > 0x7e || c === 0x3c || c === 0x26) return -1;
  }
  return MORE;
}

/**
 * plainValueEnd in a part's bytes: after a plain cell's start tag, the index
 * of the `<` of `</v></c>` that ends its `<v>` text, -1, or MORE. The text
 * must be ASCII besides (anything else is decoded and left to the scanner).
 */
export function plainValueEndAt(x: Uint8Array, after: number): number {
  const n = x.length;
  if (after + 2 >= n) return MORE;
  if (x[after] !== 0x3c || x[after + 1] !== 0x76 || x[after + 2] !== 0x3e) return -1; // <v>
  let to = after + 3;
  for (; to < n; to++) {
    const c = x[to]!;
    if (c === 0x3c) break;
    if (c < 0x20 || c === 0x26 || c === 0x3e || c >= 0x80) return -1;
  }
  if (to + 7 >= n) return MORE;
  return x[to + 1] === 0x2f && x[to + 2] === 0x76 && x[to + 3] === 0x3e && x[to + 4] === 0x3c && x[to + 5] === 0x2f && x[to + 6] === 0x63 && x[to + 7] === 0x3e ? to : -1;
}

/** Whether x[a, b) and x[c, d) hold the same bytes. */
function sameBytes(x: Uint8Array, a: number, b: number, c: number, d: number): boolean {
  if (b - a !== d - c) return false;
  for (let i = 0; i < b - a; i++) if (x[a + i] !== x[c + i]) return false;
  return true;
}

/** Number(text of x[from, to)) for ASCII bytes, without a string when it is 1 to 15 digits (a row number, a strings index, a style). */
export function numberAt(x: Buffer, from: number, to: number): number {
  if (to > from && to - from <= 15) {
    let n = 0;
    let i = from;
    for (; i < to; i++) {
      const d = x[i]! - 0x30;
      if (d < 0 || d > 9) break;
      n = n * 10 + d;
    }
    if (i === to) return n;
  }
  return Number(asciiText(x, from, to));
}

/** The text of ASCII bytes x[from, to): short ones (a number, a type) without the cost of a call into the runtime. */
export function asciiText(x: Buffer, from: number, to: number): string {
  switch (to - from) {
    case 0:
      return '';
    case 1:
      return String.fromCharCode(x[from]!);
    case 2:
      return String.fromCharCode(x[from]!, x[from + 1]!);
    case 3:
      return String.fromCharCode(x[from]!, x[from + 1]!, x[from + 2]!);
    case 4:
      return String.fromCharCode(x[from]!, x[from + 1]!, x[from + 2]!, x[from + 3]!);
    case 5:
      return String.fromCharCode(x[from]!, x[from + 1]!, x[from + 2]!, x[from + 3]!, x[from + 4]!);
    case 6:
      return String.fromCharCode(x[from]!, x[from + 1]!, x[from + 2]!, x[from + 3]!, x[from + 4]!, x[from + 5]!);
    case 7:
      return String.fromCharCode(x[from]!, x[from + 1]!, x[from + 2]!, x[from + 3]!, x[from + 4]!, x[from + 5]!, x[from + 6]!);
    default:
      // Not Buffer.from(x.buffer, …).toString(): a Buffer made for each string cost twice the string (issue 18).
      return x.toString('latin1', from, to);
  }
}

/** columnAt in a part's bytes. */
export function columnAtBytes(x: Uint8Array, from: number, to: number): number {
  let col = 0;
  for (let i = from; i < to && i < from + 4; i++) {
    const c = x[i]!;
    if (c >= 65 && c <= 90) col = col * 26 + (c - 64);
    else if (c >= 97 && c <= 122) col = col * 26 + (c - 96);
    else break;
  }
  return col;
}

/**
 * A plain cell `<c r t s>` at `lt` (its name already seen): the start and
 * end of its r, t and s values into `at` ([-1, -1] when absent), and the
 * index after its start tag, negated and less one (-(i) - 1) for an empty
 * element `<c …/>`; 0 to leave the cell to the scanner.
 */
export function scanPlainCellTag(x: string, lt: number, at: Int32Array): number {
  at[0] = at[1] = at[2] = at[3] = at[4] = at[5] = -1;
  const n = x.length;
  let j = lt + 2;
  for (;;) {
    if (j + 3 >= n) return 0;
    const k = x.charCodeAt(j);
    if (k === 0x3e) return j + 1; // >
    if (k === 0x2f) return x.charCodeAt(j + 1) === 0x3e ? -(j + 2) - 1 : 0; // <c …/>: a cell with no value
    // One space, a one-letter name, =" (anything else: the scanner)
    if (k !== 0x20 || x.charCodeAt(j + 2) !== 0x3d || x.charCodeAt(j + 3) !== 0x22) return 0;
    const name = x.charCodeAt(j + 1);
    const slot = name === 0x72 ? 0 : name === 0x74 ? 2 : name === 0x73 ? 4 : -1;
    if (slot < 0 || at[slot]! >= 0) return 0; // another attribute, or one twice (the scanner refuses that)
    const close = plainAttributeEnd(x, j + 4);
    if (close < 0) return 0;
    at[slot] = j + 4;
    at[slot + 1] = close;
    j = close + 1;
  }
}

/**
 * The index of the `"` that ends a plain attribute value starting at `from`,
 * or -1 when there is none in `x` yet or the value holds anything but
 * printable ASCII without < and & (what attribute value normalisation and
 * references leave as written). One pass, as plainTextEnd.
 */
export function plainAttributeEnd(x: string, from: number): number {
  const n = x.length;
  for (let q = from; q < n; q++) {
    const c = x.charCodeAt(q);
    if (c === 0x22) return q;
    if (c < 0x20 || c > 0x7e || c === 0x3c || c === 0x26) return -1;
  }
  return -1;
}

/** 1-based column of the cell reference x[from, to) (`AB12` → 28), without the slice; see columnOf (sheet.ts). */
export function columnAt(x: string, from: number, to: number): number {
  let col = 0;
  for (let i = from; i < to && i < from + 4; i++) {
    const c = x.charCodeAt(i);
    if (c >= 65 && c <= 90) col = col * 26 + (c - 64);
    else if (c >= 97 && c <= 122) col = col * 26 + (c - 96);
    else break;
  }
  return col;
}

/**
 * A ByteShortcut taking a run of plain elements (rows of a sheet, items of the shared strings) off the bytes:
 * `scan` reads one at `i` (the index after it, MORE when the bytes end inside it, else -1: not plain); one cut
 * by the chunk's end waits for the next chunk unless it is already past `maxHeld` bytes; the scanner takes
 * what is not plain up to the element's `close` tag, and after a run of those the rest of the chunk.
 */
export function plainRunShortcut(ready: () => boolean, scan: (x: Buffer, i: number) => number, maxHeld: number, close: string): ByteShortcut {
  /**
   * Where the last take started, and where it left the bytes to the scanner (-1: it did not); both the same when it
   * took not a single element: a run the fast path cannot read. Compared in resume, not in take: that branch of take
   * runs first long after take is optimised, and a comparison there would throw the optimised code away.
   */
  let lastFrom = 0;
  let leftAt = -1;
  return {
    ready,
    take(x, from) {
      lastFrom = from;
      leftAt = -1;
      const n = x.length;
      let i = from;
      for (;;) {
        // Whitespace between elements is text the handlers drop.
        while (i < n && (x[i] === 0x20 || x[i] === 0x0a || x[i] === 0x0d || x[i] === 0x09)) i++;
        if (i === n) return i;
        const end = scan(x, i);
        if (end >= 0) {
          i = end;
          continue;
        }
        if (end === MORE && n - i <= maxHeld) return -i - 1;
        leftAt = i;
        return i;
      }
    },
    resume(x, from) {
      if (leftAt === lastFrom) return x.length;
      const end = x.indexOf(close, from);
      return end < 0 ? x.length : end + close.length;
    },
  };
}
