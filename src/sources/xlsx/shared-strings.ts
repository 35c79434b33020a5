import type { WorkbookArchive } from './archive.js';
import { unescapeXstring } from './cell-text.js';
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

  open(name: string): void {
    if (name === 'rPh') this.depthInPhonetic++;
    else if (name === 't' && this.depthInPhonetic === 0) this.inText = true;
  }

  close(name: string): void {
    if (name === 'rPh') this.depthInPhonetic--;
    else if (name === 't') this.inText = false;
  }

  text(value: string): void {
    if (this.inText) this.parts.push(value);
  }

  /** The item's text, still with its `_xHHHH_` escapes; starts the next item. */
  take(): string {
    const s = this.parts.length === 1 ? this.parts[0]! : this.parts.join('');
    this.parts = [];
    this.depthInPhonetic = 0;
    this.inText = false;
    return s;
  }
}

/** The shared strings table, in order (cells refer to it by index). */
export async function readSharedStrings(archive: WorkbookArchive, part: string): Promise<string[]> {
  const strings: string[] = [];
  const item = new StringItem();
  let inItem = false;
  const handlers: XmlHandlers = {
    open(name) {
      if (name === 'si') inItem = true;
      else if (inItem) item.open(name);
    },
    close(name) {
      if (name === 'si') {
        inItem = false;
        strings.push(unescapeXstring(item.take()));
      } else if (inItem) item.close(name);
    },
    text(value) {
      if (inItem) item.text(value);
    },
  };
  await readXml(archive.file, part, archive.text(part), handlers);
  return strings;
}
