import { SourceError } from '../../model/source-error.js';
import type { WorkbookArchive } from './archive.js';
import { partName } from './part-name.js';
import { unescapeXstring } from './cell-text.js';
import { asciiText, plainRunShortcut, scanPlainItem, scanPlainItemAt, type PlainSpan } from './plain-cell.js';
import { readXml, type XmlHandlers } from './xml.js';

/**
 * Collects the plain text of a string item (`<si>` in the strings table,
 * `<is>` in a cell): its `<t>`, or every rich-text run's `<t>` joined, but
 * not the phonetic guide (`<rPh>`, the furigana a Japanese Excel stores
 * beside a name), which is not part of the value.
 */
export class StringItem {
  private depthInPhonetic = 0;
  private inText = false;
  private parts: string[] = [];
  private length = 0;

  open(name: string): void {
    if (name === 'rPh') this.depthInPhonetic++;
    else if (name === 't' && this.depthInPhonetic === 0) this.inText = true;
  }

  close(name: string): void {
    if (name === 'rPh') this.depthInPhonetic--;
    else if (name === 't') this.inText = false;
  }

  /** Adds character data; returns the item's length so far. */
  text(value: string): number {
    if (this.inText) {
      this.parts.push(value);
      this.length += value.length;
    }
    return this.length;
  }

  /** The item's text, still with its `_xHHHH_` escapes; starts the next item. */
  take(): string {
    const s = this.parts.length === 1 ? this.parts[0]! : this.parts.join('');
    this.parts = [];
    this.length = 0;
    this.depthInPhonetic = 0;
    this.inText = false;
    return s;
  }
}

/** The most bytes of a plain item held back from one inflated chunk to the next, to be read as bytes (beyond: as text). */
const MAX_HELD_ITEM = 64 * 1024;

/** What the sheet reads from the strings table: the item at an index, or undefined where there is none. */
export interface StringTable {
  readonly length: number;
  get(i: number): string | undefined;
}

/** A strings table of strings as they are (tests, and a workbook read without the fast path). */
export class ListedStrings implements StringTable {
  constructor(private readonly items: readonly string[]) {}

  get length(): number {
    return this.items.length;
  }

  get(i: number): string | undefined {
    return (i >>> 0) === i ? this.items[i] : undefined;
  }
}

// An item's kind: its bytes hold a character beyond ASCII; its text may hold an _xHHHH_ escape; a cell asked for it once.
const NON_ASCII = 1;
const ESCAPED = 2;
const SEEN = 4;
/** Text that does not go through UTF-8 unchanged (a lone surrogate an _xD800_ escape made): kept as a string. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * The shared strings table as its items' UTF-8 bytes in one arena, each made a string only when a cell asks for
 * it, and kept as one from its second use on (issue 18). A table of strings made as it was read lived through
 * the whole sheet, so every young-generation GC while it grew copied them (a third of a million for a 100,000-row
 * export, a sixth of the read's CPU); most of them are asked for by one cell, whose record then takes a string
 * that dies young with it. The arena is outside the heap: nothing in it for the GC to trace.
 */
export class SharedStrings implements StringTable {
  // Arena and index start small and double: their growth is then met before the optimising compiler takes addBytes.
  private arena = Buffer.allocUnsafe(1024);
  private used = 0;
  /** Item i is arena[bounds[i], bounds[i + 1]). */
  private bounds = new Int32Array(65);
  private kinds = new Uint8Array(64);
  private count = 0;
  /** Items made strings that a cell asked for more than once (filled in as they are; empty slots until then). */
  private made: Array<string | undefined> = [];
  /** Items that UTF-8 would not keep as they are (LONE_SURROGATE), by index. */
  private readonly kept = new Map<number, string>();

  get length(): number {
    return this.count;
  }

  /** Add an item from the part's bytes x[from, to): `nonAscii` when they hold a byte ≥ 0x80, `escaped` when its text may hold an _xHHHH_ escape. */
  addBytes(x: Buffer, from: number, to: number, nonAscii: boolean, escaped: boolean): void {
    const len = to - from;
    const at = this.claim(len);
    const arena = this.arena;
    // Short items byte by byte: a copy by Buffer.copy is a call into the runtime.
    if (len < 64) for (let k = 0; k < len; k++) arena[at + k] = x[from + k]!;
    else x.copy(arena, at, from, to);
    this.push(at + len, (nonAscii ? NON_ASCII : 0) | (escaped ? ESCAPED : 0));
  }

  /** Add an item read as text (its escapes already undone). */
  addText(s: string): void {
    if (LONE_SURROGATE.test(s)) {
      this.kept.set(this.count, s);
      this.push(this.used, 0);
      return;
    }
    const len = Buffer.byteLength(s, 'utf8');
    const at = this.claim(len);
    this.arena.write(s, at, len, 'utf8');
    this.push(at + len, len === s.length ? 0 : NON_ASCII);
  }

  /** The item at `i` (a cell's index), or undefined when the table has none there. */
  get(i: number): string | undefined {
    if ((i >>> 0) !== i || i >= this.count) return undefined;
    const s = this.made[i];
    return s !== undefined ? s : this.make(i);
  }

  private make(i: number): string {
    const kind = this.kinds[i]!;
    const from = this.bounds[i]!;
    const to = this.bounds[i + 1]!;
    let s: string;
    if (from === to) s = this.kept.get(i) ?? '';
    else {
      s = (kind & NON_ASCII) !== 0 ? this.arena.toString('utf8', from, to) : asciiText(this.arena, from, to);
      if ((kind & ESCAPED) !== 0) s = unescapeXstring(s);
    }
    if ((kind & SEEN) === 0) this.kinds[i] = kind | SEEN;
    else {
      // Asked for again: kept from now on. The slots are made on the first such item, when the table is whole.
      if (this.made.length === 0) this.made = new Array<string | undefined>(this.count);
      this.made[i] = s;
    }
    return s;
  }

  private claim(len: number): number {
    if (this.used + len > this.arena.length) {
      const next = Buffer.allocUnsafe(Math.max(this.arena.length * 2, this.used + len));
      this.arena.copy(next, 0, 0, this.used);
      this.arena = next;
    }
    return this.used;
  }

  private push(end: number, kind: number): void {
    if (this.count === this.kinds.length) {
      const bounds = new Int32Array(this.kinds.length * 2 + 1);
      bounds.set(this.bounds);
      this.bounds = bounds;
      const kinds = new Uint8Array(this.kinds.length * 2);
      kinds.set(this.kinds);
      this.kinds = kinds;
    }
    this.used = end;
    this.kinds[this.count] = kind;
    this.bounds[++this.count] = end;
  }
}

/**
 * The shared strings table, in order (cells refer to it by index); refused beyond `maxBytes` uncompressed.
 * `general`: every item through the general scanner, none by the fast path (plain-cell.ts), kept as strings, for tests to compare.
 */
export async function readSharedStrings(archive: WorkbookArchive, part: string, maxBytes: number, general = false): Promise<StringTable> {
  const declared = archive.declaredBytes(part);
  if (declared > maxBytes) {
    throw new SourceError(
      'LIMIT_SHARED_STRINGS',
      `${archive.file}: its shared strings table (${partName(part)}) is ${declared} bytes, more than max_shared_strings_bytes (${maxBytes}); if the export is genuine, raise limits.max_shared_strings_bytes`,
      { file: archive.file, setting: 'limits.max_shared_strings_bytes' },
    );
  }
  const listed: string[] = [];
  const table = new SharedStrings();
  const add = general ? (s: string) => void listed.push(s) : (s: string) => table.addText(s);
  const item = new StringItem();
  let inItem = false;
  const openItem = () => {
    inItem = true;
  };
  const closeItem = () => {
    inItem = false;
    add(unescapeXstring(item.take()));
  };
  const handlers: XmlHandlers = {
    open(name) {
      if (name === 'si') openItem();
      else if (inItem) item.open(name);
    },
    close(name) {
      if (name === 'si') closeItem();
      else if (inItem) item.close(name);
    },
    text(value) {
      if (inItem) item.text(value);
    },
  };
  if (!general) {
    // A plain item is its text: what the scanner's events (open si, open t, text, close t, close si) would have added.
    const plain = { text: '', escaped: false };
    handlers.element = (x, lt) => {
      if (inItem) return -1;
      // Item after item while they are plain and follow one another: the scanner's work between them cost as much as the items.
      let end = -1;
      for (let next = scanPlainItem(x, lt, plain); next >= 0; next = scanPlainItem(x, next, plain)) {
        add(plain.escaped ? unescapeXstring(plain.text) : plain.text);
        end = next;
      }
      return end;
    };
    // The same off the part's bytes before they are decoded (ByteShortcut, archive.ts), where the scanner is between items:
    // their bytes go to the table as they are.
    const span: PlainSpan = { from: 0, to: 0, nonAscii: false, escaped: false };
    handlers.bytes = plainRunShortcut(
      () => !inItem,
      (x, i) => {
        const end = scanPlainItemAt(x, i, span);
        if (end >= 0) table.addBytes(x, span.from, span.to, span.nonAscii, span.escaped);
        return end;
      },
      MAX_HELD_ITEM,
      '</si>',
    );
  }
  await readXml(archive.file, part, (shortcut) => archive.text(part, shortcut), handlers);
  return general ? new ListedStrings(listed) : table;
}
