import { SaxesParser, type SaxesTagPlain } from 'saxes';
import { SourceError } from '../errors.js';
import { boundText } from '../excerpt.js';
import { partName } from './archive.js';

/** Handlers for one XML part. Tag names arrive without the root element's prefix (`x:c` → `c`). */
export interface XmlHandlers {
  open(name: string, attributes: Record<string, string>): void;
  close(name: string): void;
  /** Character data (text and CDATA), possibly in several pieces. */
  text(value: string): void;
}

// SpreadsheetML with its extensions (extLst, mc:AlternateContent) stays within about a dozen levels.
const MAX_DEPTH = 64;

/**
 * Parse a part's text as it streams, calling `handlers` for each element, and
 * yield after each piece so that the caller can hand on what the handlers
 * built. A handler may throw to stop the read with its own error. `where`
 * says where in the part a syntax error was met (after which row).
 */
export async function* parseXml(
  file: string,
  part: string,
  text: AsyncIterable<string>,
  handlers: XmlHandlers,
  where: () => string = () => '',
): AsyncGenerator<void> {
  // No position tracking: it is a third of saxes's time, and our errors name rows, not XML columns.
  const parser = new SaxesParser({ xmlns: false, position: false });
  let malformed: Error | null = null;
  // Only the root element's own prefix is stripped (x:c → c, as the Open XML SDK may write every element):
  // an element of another namespace keeps its prefix, so x15:workbookPr is never taken for workbookPr.
  let rootPrefix: string | null = null;
  const name = (qualified: string) => (rootPrefix && qualified.startsWith(rootPrefix) ? qualified.slice(rootPrefix.length) : qualified);
  let depth = 0;
  parser.on('opentag', (tag: SaxesTagPlain) => {
    if (rootPrefix === null) {
      const colon = tag.name.indexOf(':');
      rootPrefix = colon < 0 ? '' : tag.name.slice(0, colon + 1);
    }
    // saxes keeps every open element; a crafted part nested a million deep would take half a gigabyte.
    if (++depth > MAX_DEPTH) {
      throw new SourceError('WRONG_FORMAT', `${file}: part ${partName(part)} nests elements deeper than any workbook writer does (${MAX_DEPTH}); refused as damaged or crafted`, { file, setting: 'type' });
    }
    handlers.open(name(tag.name), tag.attributes);
  });
  parser.on('closetag', (tag: SaxesTagPlain) => {
    depth--;
    handlers.close(name(tag.name));
  });
  parser.on('text', handlers.text);
  parser.on('cdata', handlers.text);
  parser.on('error', (err) => {
    malformed ??= err;
  });
  const refuse = (err: Error) => {
    const at = where();
    // saxes quotes what it met (an entity name, a character): bounded and escaped, and not kept as the cause.
    return new SourceError('WRONG_FORMAT', `${file}: part ${partName(part)} is not well-formed XML${at ? ` ${at}` : ''} (${boundText(err.message, 120)}); the workbook is damaged — export it again`, { file, setting: 'type' });
  };
  // A handler's throw leaves write() and ends the read; it is that error the caller sees.
  for await (const piece of text) {
    parser.write(piece);
    if (malformed) throw refuse(malformed);
    yield;
  }
  parser.close();
  if (malformed) throw refuse(malformed);
}

/** Parse a whole (small) part, for the parts read before any row. */
export async function readXml(file: string, part: string, text: AsyncIterable<string>, handlers: XmlHandlers): Promise<void> {
  for await (const _ of parseXml(file, part, text, handlers)) void _;
}
