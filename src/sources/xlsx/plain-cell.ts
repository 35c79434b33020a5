/**
 * The fast path of a sheet's read (issue 18): nearly every cell a workbook
 * writer produces is `<c r="B2" t="s" s="1"><v>12</v></c>` (or `<c …/>`), and
 * nearly every shared string `<si><t>text</t></si>`. These read such an
 * element straight off the part's text, without the general scanner's work
 * per tag. They take only what the scanner would read alike (no prefix, only
 * the attributes r, t and s, double-quoted and plain, text without references,
 * CR, `>` or characters XML refuses) and leave anything else to it (-1):
 * inline and rich text, formulas, escapes, other attributes, an element cut
 * between two pieces. The sheet and strings readers replay what they read
 * through the same handler code as the scanner's events.
 */

/** A cell as read by scanPlainCell. */
export interface PlainCell {
  r: string | undefined;
  t: string | undefined;
  s: string | undefined;
  /** The `<v>` text; null for an empty element `<c …/>`. */
  v: string | null;
}

/** Read a plain cell at `lt` into `out`; the index after it, or -1 to leave it to the scanner. */
export function scanPlainCell(x: string, lt: number, out: PlainCell): number {
  if (x.charCodeAt(lt + 1) !== 0x63) return -1; // c
  let r: string | undefined;
  let t: string | undefined;
  let s: string | undefined;
  let j = lt + 2;
  for (;;) {
    const k = x.charCodeAt(j);
    if (k === 0x3e) break; // >
    if (k === 0x2f) {
      // <c …/>: a cell with no value
      if (x.charCodeAt(j + 1) !== 0x3e) return -1;
      out.r = r;
      out.t = t;
      out.s = s;
      out.v = null;
      return j + 2;
    }
    // One space, a one-letter name, =" (anything else: the scanner)
    if (k !== 0x20 || x.charCodeAt(j + 2) !== 0x3d || x.charCodeAt(j + 3) !== 0x22) return -1;
    const name = x.charCodeAt(j + 1);
    const close = x.indexOf('"', j + 4);
    if (close < 0) return -1;
    for (let q = j + 4; q < close; q++) {
      const c = x.charCodeAt(q);
      // Printable ASCII but < and &: attribute value normalisation and references leave it as written.
      if (c < 0x20 || c > 0x7e || c === 0x3c || c === 0x26) return -1;
    }
    const value = x.slice(j + 4, close);
    if (name === 0x72 && r === undefined) r = value;
    else if (name === 0x74 && t === undefined) t = value;
    else if (name === 0x73 && s === undefined) s = value;
    else return -1; // another attribute, or one twice (the scanner refuses that)
    j = close + 1;
  }
  if (x.charCodeAt(j + 1) !== 0x3c || x.charCodeAt(j + 2) !== 0x76 || x.charCodeAt(j + 3) !== 0x3e) return -1; // <v>
  const from = j + 4;
  const to = plainTextEnd(x, from);
  if (to < 0 || !x.startsWith('</v></c>', to)) return -1;
  out.r = r;
  out.t = t;
  out.s = s;
  out.v = x.slice(from, to);
  return to + 8;
}

/**
 * Read a plain shared string `<si><t>…</t></si>` (the `<t>` may say
 * `xml:space="preserve"`) at `lt`, its text into `out.text`; the index after
 * it, or -1 to leave it to the scanner.
 */
export function scanPlainItem(x: string, lt: number, out: { text: string }): number {
  if (!x.startsWith('<si><t', lt)) return -1;
  let j = lt + 6;
  if (x.charCodeAt(j) === 0x20) {
    if (!x.startsWith(' xml:space="preserve"', j)) return -1;
    j += 21;
  }
  if (x.charCodeAt(j) !== 0x3e) return -1;
  const from = j + 1;
  const to = plainTextEnd(x, from);
  if (to < 0 || !x.startsWith('</t></si>', to)) return -1;
  out.text = x.slice(from, to);
  return to + 9;
}

/**
 * The index of the `<` that ends plain text from `from`: text the scanner
 * hands on as it is written. -1 when there is none in `x` yet or the text
 * holds a control character (tab, LF and CR included), `&`, `>` or
 * U+FFFE/U+FFFF.
 */
function plainTextEnd(x: string, from: number): number {
  const to = x.indexOf('<', from);
  if (to < 0) return -1;
  for (let q = from; q < to; q++) {
    const c = x.charCodeAt(q);
    if (c < 0x20 || c === 0x26 || c === 0x3e || c >= 0xfffe) return -1;
  }
  return to;
}

/** A row as read by scanPlainRow: its `r` and its first `n` cells (the array is reused from row to row). */
export interface PlainRow {
  r: string | undefined;
  cells: PlainCell[];
  n: number;
}

/** Attributes of a plain row past which the scanner reads it (writers give r, spans, ht, customHeight, x14ac:dyDescent). */
const MAX_ROW_ATTRIBUTES = 8;

/**
 * Read a plain row `<row …>` of plain cells only, up to its `</row>`, at `lt`
 * into `out`; the index after it, or -1 to leave the whole row to the
 * scanner (nothing is handed on before the row has been read to its end, so
 * the scanner then reads it afresh). Its attributes are taken as the scanner
 * would read them only when plain: double-quoted, printable ASCII without
 * `&` or `<`, names of letters and digits with at most one prefix, none twice.
 */
export function scanPlainRow(x: string, lt: number, out: PlainRow): number {
  if (!x.startsWith('<row', lt)) return -1;
  let r: string | undefined;
  let j = lt + 4;
  const names: string[] = [];
  for (;;) {
    const k = x.charCodeAt(j);
    if (k === 0x3e) break; // >
    if (k !== 0x20 || names.length === MAX_ROW_ATTRIBUTES) return -1;
    const from = j + 1;
    let q = from;
    let colon = false;
    for (;;) {
      const c = x.charCodeAt(q);
      const letter = (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a);
      if (letter || (c >= 0x30 && c <= 0x39 && q > from && x.charCodeAt(q - 1) !== 0x3a)) q++;
      else if (c === 0x3a && !colon && q > from) {
        colon = true;
        q++;
      } else break;
    }
    // A name starts with a letter and does not end with the prefix's colon; then =" at once.
    const first = x.charCodeAt(from);
    if (q === from || !((first >= 0x61 && first <= 0x7a) || (first >= 0x41 && first <= 0x5a)) || x.charCodeAt(q - 1) === 0x3a) return -1;
    if (x.charCodeAt(q) !== 0x3d || x.charCodeAt(q + 1) !== 0x22) return -1;
    const name = x.slice(from, q);
    if (names.includes(name)) return -1; // the scanner refuses it
    names.push(name);
    const close = x.indexOf('"', q + 2);
    if (close < 0) return -1;
    for (let v = q + 2; v < close; v++) {
      const c = x.charCodeAt(v);
      if (c < 0x20 || c > 0x7e || c === 0x3c || c === 0x26) return -1;
    }
    if (name === 'r') r = x.slice(q + 2, close);
    j = close + 1;
  }
  j++;
  let n = 0;
  const cells = out.cells;
  for (;;) {
    if (x.charCodeAt(j) !== 0x3c) return -1;
    if (x.charCodeAt(j + 1) === 0x2f) {
      if (!x.startsWith('</row>', j)) return -1;
      out.r = r;
      out.n = n;
      return j + 6;
    }
    if (n === cells.length) cells.push({ r: undefined, t: undefined, s: undefined, v: null });
    j = scanPlainCell(x, j, cells[n]!);
    if (j < 0) return -1;
    n++;
  }
}
