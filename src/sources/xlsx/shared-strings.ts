import { SourceError } from '../../model/source-error.js';
import type { WorkbookArchive } from './archive.js';
import { partName } from './part-name.js';
import { unescapeXstring } from './cell-text.js';
import { plainRunShortcut, scanPlainItem, scanPlainItemAt } from './plain-cell.js';
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

/**
 * The shared strings table, in order (cells refer to it by index); refused beyond `maxBytes` uncompressed.
 * `general`: every item through the general scanner, none by the fast path (plain-cell.ts), for tests to compare.
 */
export async function readSharedStrings(archive: WorkbookArchive, part: string, maxBytes: number, general = false): Promise<string[]> {
  const declared = archive.declaredBytes(part);
  if (declared > maxBytes) {
    throw new SourceError(
      'LIMIT_SHARED_STRINGS',
      `${archive.file}: its shared strings table (${partName(part)}) is ${declared} bytes, more than max_shared_strings_bytes (${maxBytes}); if the export is genuine, raise limits.max_shared_strings_bytes`,
      { file: archive.file, setting: 'limits.max_shared_strings_bytes' },
    );
  }
  const strings: string[] = [];
  const item = new StringItem();
  let inItem = false;
  const openItem = () => {
    inItem = true;
  };
  const closeItem = () => {
    inItem = false;
    strings.push(unescapeXstring(item.take()));
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
        strings.push(plain.escaped ? unescapeXstring(plain.text) : plain.text);
        end = next;
      }
      return end;
    };
    // The same off the part's bytes before they are decoded (ByteShortcut, archive.ts), where the scanner is between items.
    handlers.bytes = plainRunShortcut(
      () => !inItem,
      (x, i) => {
        const end = scanPlainItemAt(x, i, plain);
        if (end >= 0) strings.push(plain.escaped ? unescapeXstring(plain.text) : plain.text);
        return end;
      },
      MAX_HELD_ITEM,
      '</si>',
    );
  }
  await readXml(archive.file, part, (shortcut) => archive.text(part, shortcut), handlers);
  return strings;
}
