import { SaxesParser, type SaxesTagPlain } from 'saxes';
import { SourceError } from '../errors.js';

/** Handlers for one XML part. Tag names arrive without their namespace prefix (`x:c` → `c`). */
export interface XmlHandlers {
  open(name: string, attributes: Record<string, string>): void;
  close(name: string): void;
  /** Character data (text and CDATA), possibly in several pieces. */
  text(value: string): void;
}

/** A tag name without its prefix: some writers (the Open XML SDK among them) prefix every element. */
export function localName(name: string): string {
  const colon = name.indexOf(':');
  return colon < 0 ? name : name.slice(colon + 1);
}

/**
 * Parse a part's text as it streams, calling `handlers` for each element, and
 * yield after each piece so that the caller can hand on what the handlers
 * built. A handler may throw to stop the read with its own error.
 */
export async function* parseXml(file: string, part: string, text: AsyncIterable<string>, handlers: XmlHandlers): AsyncGenerator<void> {
  // No position tracking: it is a third of saxes's time, and our errors name rows, not XML columns.
  const parser = new SaxesParser({ xmlns: false, position: false });
  let malformed: Error | null = null;
  // Prefixes are stripped only in a part whose root element is prefixed: elsewhere a prefixed element
  // is an extension (mc:AlternateContent, x14:…) that we do not read, and the common case stays cheap.
  let prefixed: boolean | null = null;
  parser.on('opentag', (tag: SaxesTagPlain) => {
    prefixed ??= tag.name.includes(':');
    handlers.open(prefixed ? localName(tag.name) : tag.name, tag.attributes);
  });
  parser.on('closetag', (tag: SaxesTagPlain) => handlers.close(prefixed ? localName(tag.name) : tag.name));
  parser.on('text', handlers.text);
  parser.on('cdata', handlers.text);
  parser.on('error', (err) => {
    malformed ??= err;
  });
  const refuse = (err: Error) =>
    new SourceError('WRONG_FORMAT', `${file}: part ${part} is not well-formed XML (${err.message}); the workbook is damaged — export it again`, { file, setting: 'type' }, err);
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
