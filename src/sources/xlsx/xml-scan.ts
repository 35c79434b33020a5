/**
 * A streaming reader of the XML that workbook parts are made of, for speed
 * (issue 18): a sheet of 100,000 rows is 30 MB of XML, and a general SAX
 * parser (saxes, checked against in the tests) spent half of an XLSX read on
 * it. This one finds markup with indexOf and checks what a workbook writer
 * produces and what a damaged or crafted part could hold instead:
 * well-formed elements (names, quoted attributes, no repeats, end tags that
 * match, one root), the five predefined entities and character references,
 * comments, processing instructions, CDATA, and characters XML allows. It has
 * no DTD: a DOCTYPE is refused (no workbook part has one, and entity
 * definitions are how XML bombs are made).
 */

/** What the reader calls; tag names arrive as written (prefix included). */
export interface ScanHandlers {
  open(name: string, attributes: Record<string, string>): void;
  close(name: string): void;
  /** Character data, possibly in several pieces. */
  text(value: string): void;
  /**
   * A shortcut for the commonest elements of a part (a sheet's cells): given
   * the text and the index of a `<` inside the root element, either read the
   * whole element there, nested at most three deep, doing what open, text and
   * close would have done, and return the index after it; or return -1 to
   * leave it to the scanner. It must only take markup the scanner would
   * accept and read alike (tests compare the two).
   */
  element?(s: string, lt: number): number;
}

/** Why the XML is not well-formed; thrown by write() and close(). */
export class XmlSyntaxError extends Error {}

/** Characters XML 1.0 does not allow anywhere (controls other than tab, LF, CR; U+FFFE/FFFF). Lone surrogates are left to the UTF-8 decoder. */
const BAD_CHAR = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/;
/** Anything in text that needs a closer look (one test for the common case of plain text). */
const TEXT_SPECIAL = /[&>\r\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/;
/** Line ends as XML reads them (2.11): CR LF and a lone CR are LF, before anything else. */
const CR = /\r\n?/g;
/** An XML name (approximated as XML 1.0 5th edition: letters, digits, . - _ : and any non-ASCII, not starting with a digit, . or -). */
const NAME = /^[A-Za-z_:\u00c0-\uffff][A-Za-z0-9._:\u00b7\u00c0-\uffff-]*$/;
const XML_DECL = /^<\?xml[ \t\r\n]+version[ \t\r\n]*=[ \t\r\n]*(["'])1\.[0-9]+\1([ \t\r\n]+encoding[ \t\r\n]*=[ \t\r\n]*(["'])[A-Za-z][A-Za-z0-9._-]*\3)?([ \t\r\n]+standalone[ \t\r\n]*=[ \t\r\n]*(["'])(?:yes|no)\5)?[ \t\r\n]*\?>$/;
const ENTITY = /&(?:(lt|gt|amp|quot|apos)|#([0-9]{1,7})|#x([0-9A-Fa-f]{1,6}));/y;
const PREDEFINED: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };
/** Text held back at most while no markup follows, before it is handed on in pieces. */
const MAX_HELD = 64 * 1024;

export class XmlScanner {
  #buf = '';
  #stack: string[] = [];
  #rootSeen = false;
  #rootDone = false;
  /** Anything was read (the XML declaration may only come first). */
  #started = false;
  /** Names other than plain ASCII ones that were found good (x14ac:dyDescent, …). */
  readonly #names = new Set<string>();

  constructor(
    private readonly h: ScanHandlers,
    private readonly maxDepth: number,
    private readonly tooDeep: () => Error,
  ) {}

  /** Read a piece of the part's text. */
  write(piece: string): void {
    // Joined into one flat string, not concatenated: `a + b` makes a rope, and every charCodeAt on a rope goes
    // through it, which made the scan of a sheet half as slow again (issue 18). Reading the piece in place after
    // joining only its head with the held text was no faster in the full read.
    this.#buf = this.#buf === '' ? piece : [this.#buf, piece].join('');
    this.#run(false);
  }

  /**
   * Whether all the text written so far is read (none held back) and the
   * scanner is inside the root element with room for an element three deep:
   * where a reader may read whole elements on its own (ByteShortcut, archive.ts)
   * as the element shortcut would.
   */
  get idle(): boolean {
    return this.#buf === '' && this.#stack.length > 0 && this.#stack.length + 3 <= this.maxDepth;
  }

  /** The end of the part: anything left open is an error. */
  close(): void {
    this.#run(true);
    if (this.#buf !== '') throw new XmlSyntaxError('unexpected end of the part');
    if (!this.#rootSeen) throw new XmlSyntaxError('no root element');
    if (this.#stack.length > 0) throw new XmlSyntaxError(`unclosed element ${this.#stack[this.#stack.length - 1]}`);
  }

  #run(final: boolean): void {
    const s = this.#buf;
    const h = this.h;
    const shortcut = h.element !== undefined;
    let i = 0;
    for (;;) {
      const lt = s.indexOf('<', i);
      const end = lt < 0 ? s.length : lt;
      if (end > i) {
        if (lt < 0 && !final) {
          // No markup yet: keep the text (an entity may be cut), unless a lot of it piles up.
          if (s.length - i < MAX_HELD) break;
          const amp = s.lastIndexOf('&');
          let cut = amp >= i && s.indexOf(';', amp) < 0 ? amp : s.length;
          if (s.charCodeAt(cut - 1) === 0x0d) cut--; // a CR LF is one line end: keep them together
          if (cut === i) break;
          this.#text(s.slice(i, cut));
          i = cut;
          break;
        }
        this.#text(s.slice(i, end));
        i = end;
      }
      if (lt < 0) break;
      if (lt > 0) this.#started = true;
      if (shortcut && this.#stack.length > 0 && this.#stack.length + 3 <= this.maxDepth) {
        const after = h.element!(s, lt);
        if (after >= 0) {
          i = after;
          continue;
        }
      }
      const next = this.#markup(s, lt, final);
      if (next < 0) break; // incomplete: wait for more
      this.#started = true;
      i = next;
    }
    this.#buf = i === 0 ? s : s.slice(i);
  }

  #text(t: string): void {
    let v = t;
    if (TEXT_SPECIAL.test(t)) {
      if (BAD_CHAR.test(t)) throw new XmlSyntaxError('a character XML does not allow');
      if (t.includes(']]>')) throw new XmlSyntaxError(']]> in text');
      if (t.includes('\r')) v = v.replace(CR, '\n');
      if (v.includes('&')) v = decode(v);
    }
    if (this.#stack.length === 0) {
      if (v.trim() !== '') throw new XmlSyntaxError(this.#rootSeen ? 'text after the root element' : 'text before the root element');
      return;
    }
    this.h.text(v);
  }

  /** Read the markup at `lt`; returns the index after it, or -1 when it is not all there yet. */
  #markup(s: string, lt: number, final: boolean): number {
    const c = s.charCodeAt(lt + 1);
    if (c === 0x2f) return this.#endTag(s, lt, final); // </
    if (c === 0x3f) return this.#skip(s, lt, '?>', final, 'processing instruction'); // <?
    if (c === 0x21) {
      // <!-- comment -->, <![CDATA[ … ]]>, <!DOCTYPE
      if (s.startsWith('<!--', lt)) {
        const close = s.indexOf('-->', lt + 4);
        if (close < 0) return incomplete(final, 'comment');
        const body = s.slice(lt + 4, close);
        if (body.includes('--') || body.endsWith('-')) throw new XmlSyntaxError('-- inside a comment');
        if (BAD_CHAR.test(body)) throw new XmlSyntaxError('a character XML does not allow');
        return close + 3;
      }
      if (s.startsWith('<![CDATA[', lt)) {
        const close = s.indexOf(']]>', lt + 9);
        if (close < 0) return incomplete(final, 'CDATA section');
        if (this.#stack.length === 0) throw new XmlSyntaxError('CDATA outside the root element');
        const t = s.slice(lt + 9, close);
        if (BAD_CHAR.test(t)) throw new XmlSyntaxError('a character XML does not allow');
        this.h.text(t.includes('\r') ? t.replace(CR, '\n') : t);
        return close + 3;
      }
      if (s.length - lt < 9 && !final) return -1;
      if (s.startsWith('<!DOCTYPE', lt)) throw new XmlSyntaxError('a DOCTYPE (no workbook part has one)');
      throw new XmlSyntaxError('unknown markup <!');
    }
    return this.#startTag(s, lt, final);
  }

  #skip(s: string, lt: number, close: string, final: boolean, what: string): number {
    const at = s.indexOf(close, lt + 2);
    if (at < 0) return incomplete(final, what);
    // The XML declaration (<?xml …?>) only at the very start of the part.
    if (BAD_CHAR.test(s.slice(lt + 2, at))) throw new XmlSyntaxError('a character XML does not allow');
    const target = /^[^\s?]*/.exec(s.slice(lt + 2, Math.min(at, lt + 40)))![0];
    if (target.toLowerCase() === 'xml') {
      if (this.#started) throw new XmlSyntaxError('an XML declaration after the start');
      if (!XML_DECL.test(s.slice(lt, at + 2))) throw new XmlSyntaxError('a malformed XML declaration');
    } else if (!NAME.test(target)) throw new XmlSyntaxError('a processing instruction without a good target');
    this.#started = true;
    return at + close.length;
  }

  #endTag(s: string, lt: number, final: boolean): number {
    const gt = s.indexOf('>', lt + 2);
    if (gt < 0) return incomplete(final, 'end tag');
    const open = this.#stack[this.#stack.length - 1];
    // The name as the open element's (no new string): then only whitespace up to >.
    let ok = open !== undefined && s.startsWith(open, lt + 2);
    for (let j = lt + 2 + (open?.length ?? 0); ok && j < gt; j++) ok = isSpace(s.charCodeAt(j));
    if (!ok) {
      const name = s.slice(lt + 2, gt).trimEnd();
      throw new XmlSyntaxError(open === undefined ? `end tag ${name} with no element open` : `end tag ${name} closes ${open}`);
    }
    this.#stack.pop();
    if (this.#stack.length === 0) this.#rootDone = true;
    this.h.close(open!);
    return gt + 1;
  }

  #startTag(s: string, lt: number, final: boolean): number {
    const n = s.length;
    const name = this.#name(s, lt + 1, false);
    if (name === null) return incomplete(final, 'start tag');
    let j = lt + 1 + name.length;
    let attributes: Record<string, string> = NO_ATTRIBUTES;
    for (;;) {
      let k = s.charCodeAt(j);
      const spaced = k === 0x20 || k === 0x09 || k === 0x0a || k === 0x0d;
      while (k === 0x20 || k === 0x09 || k === 0x0a || k === 0x0d) k = s.charCodeAt(++j);
      if (j >= n) return incomplete(final, 'start tag');
      if (k === 0x3e) {
        this.#open(name, attributes, false);
        return j + 1;
      }
      if (k === 0x2f) {
        if (j + 1 >= n) return incomplete(final, 'start tag');
        if (s.charCodeAt(j + 1) !== 0x3e) throw new XmlSyntaxError(`/ inside the tag ${name}`);
        this.#open(name, attributes, true);
        return j + 2;
      }
      if (!spaced) throw new XmlSyntaxError(`no space before an attribute of ${name}`);
      const attr = this.#name(s, j, true);
      if (attr === null) return incomplete(final, 'attribute');
      let q = j + attr.length;
      k = s.charCodeAt(q);
      while (k === 0x20 || k === 0x09 || k === 0x0a || k === 0x0d) k = s.charCodeAt(++q);
      if (q >= n) return incomplete(final, 'attribute');
      if (k !== 0x3d) throw new XmlSyntaxError(`attribute ${attr} of ${name} has no value`);
      k = s.charCodeAt(++q);
      while (k === 0x20 || k === 0x09 || k === 0x0a || k === 0x0d) k = s.charCodeAt(++q);
      if (q >= n) return incomplete(final, 'attribute');
      if (k !== 0x22 && k !== 0x27) throw new XmlSyntaxError(`attribute ${attr} of ${name} is not quoted`);
      const close = s.indexOf(k === 0x22 ? '"' : "'", q + 1);
      if (close < 0) return incomplete(final, 'attribute value');
      let value = s.slice(q + 1, close);
      let special = false;
      for (let v = q + 1; v < close && !special; v++) {
        const c = s.charCodeAt(v);
        special = c < 0x20 || c === 0x3c || c === 0x26 || c >= 0xfffe;
      }
      if (special) {
        if (value.includes('<')) throw new XmlSyntaxError(`< in attribute ${attr} of ${name}`);
        if (BAD_CHAR.test(value)) throw new XmlSyntaxError('a character XML does not allow');
        // Attribute value normalisation (XML 1.0 3.3.3): tab, LF and CR become spaces, before references are expanded.
        value = value.replace(CR, '\n').replace(/[\t\n]/g, ' ');
        if (value.includes('&')) value = decode(value);
      }
      if (attributes === NO_ATTRIBUTES) attributes = {};
      else if (attributes[attr] !== undefined && Object.hasOwn(attributes, attr)) throw new XmlSyntaxError(`attribute ${attr} twice in ${name}`);
      attributes[attr] = value;
      j = close + 1;
    }
  }

  #open(name: string, attributes: Record<string, string>, empty: boolean): void {
    if (this.#rootDone) throw new XmlSyntaxError(`a second root element ${name}`);
    this.#rootSeen = true;
    if (this.#stack.length + 1 > this.maxDepth) throw this.tooDeep();
    this.h.open(name, attributes);
    if (empty) {
      if (this.#stack.length === 0) this.#rootDone = true;
      this.h.close(name);
    } else this.#stack.push(name);
  }

  /**
   * The name at `p` (an element's, or with `attribute` an attribute's, ended by = or whitespace), checked:
   * short ASCII names (c, r, t, s, v, row) by their characters, others by the pattern once each.
   * Null when the buffer ends inside it.
   */
  #name(s: string, p: number, attribute: boolean): string | null {
    let j = p;
    const n = s.length;
    let plain = true;
    while (j < n) {
      const k = s.charCodeAt(j);
      if (isSpace(k) || (attribute ? k === 0x3d : k === 0x3e || k === 0x2f)) break;
      if (!((k >= 0x61 && k <= 0x7a) || (k >= 0x41 && k <= 0x5a) || k === 0x5f || (j > p && k >= 0x30 && k <= 0x39))) plain = false;
      j++;
    }
    if (j >= n) return null;
    const name = s.slice(p, j);
    if (plain && j > p) return name;
    if (this.#names.has(name)) return name;
    if (!NAME.test(name)) throw new XmlSyntaxError(`not an XML name: ${JSON.stringify(name.slice(0, 40))}`);
    if (this.#names.size < 1_000) this.#names.add(name);
    return name;
  }
}

function isSpace(k: number): boolean {
  return k === 0x20 || k === 0x09 || k === 0x0a || k === 0x0d;
}

/** The attributes of an element that has none (shared: handlers only read them). */
const NO_ATTRIBUTES: Record<string, string> = Object.freeze({}) as Record<string, string>;

function incomplete(final: boolean, what: string): number {
  if (final) throw new XmlSyntaxError(`unterminated ${what}`);
  return -1;
}

/** Expand the predefined entities and character references; anything else with & is an error. */
function decode(t: string): string {
  let out = '';
  let i = 0;
  for (;;) {
    const amp = t.indexOf('&', i);
    if (amp < 0) return out + t.slice(i);
    out += t.slice(i, amp);
    ENTITY.lastIndex = amp;
    const m = ENTITY.exec(t);
    if (m === null) throw new XmlSyntaxError(`an undefined entity or a bare & at ${JSON.stringify(t.slice(amp, amp + 12))}`);
    if (m[1] !== undefined) out += PREDEFINED[m[1]]!;
    else {
      const cp = m[2] !== undefined ? Number(m[2]) : parseInt(m[3]!, 16);
      const ok = cp === 0x9 || cp === 0xa || cp === 0xd || (cp >= 0x20 && cp <= 0xd7ff) || (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
      if (!ok) throw new XmlSyntaxError(`a character reference to ${cp}, which XML does not allow`);
      out += String.fromCodePoint(cp);
    }
    i = ENTITY.lastIndex;
  }
}
