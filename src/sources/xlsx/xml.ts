import { SourceError } from '../../model/source-error.js';
import { boundText } from '../../model/excerpt.js';
import { partName } from './part-name.js';
import type { ByteShortcut } from './archive.js';
import { XmlScanner, XmlSyntaxError } from './xml-scan.js';

/** Handlers for one XML part. Tag names arrive without the root element's prefix (`x:c` → `c`). */
export interface XmlHandlers {
  open(name: string, attributes: Record<string, string>): void;
  close(name: string): void;
  /** Character data (text and CDATA), possibly in several pieces. */
  text(value: string): void;
  /** A shortcut for the commonest elements, as ScanHandlers.element (it sees names as written, prefix included). */
  element?(s: string, lt: number): number;
  /**
   * A shortcut on the part's bytes (ByteShortcut, archive.ts) for where the
   * scanner is idle: `ready` says whether the handler's own state allows it.
   */
  bytes?: ByteShortcut;
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
  text: AsyncIterable<string> | ((shortcut: ByteShortcut | undefined) => AsyncIterable<string>),
  handlers: XmlHandlers,
  where: () => string = () => '',
): AsyncGenerator<void> {
  let rootPrefix: string | null = null;
  // Only the root element's own prefix is stripped (x:c → c, as the Open XML SDK may write every element):
  // an element of another namespace keeps its prefix, so x15:workbookPr is never taken for workbookPr.
  const name = (qualified: string) => (rootPrefix && qualified.startsWith(rootPrefix) ? qualified.slice(rootPrefix.length) : qualified);
  // Past MAX_DEPTH the part is refused: a crafted part nested a million deep would hold a million names open.
  const tooDeep = () =>
    new SourceError('WRONG_FORMAT', `${file}: part ${partName(part)} nests elements deeper than any workbook writer does (${MAX_DEPTH}); refused as damaged or crafted`, { file, setting: 'type' });
  const scanner = new XmlScanner(
    {
      open(qualified, attributes) {
        if (rootPrefix === null) {
          const colon = qualified.indexOf(':');
          rootPrefix = colon < 0 ? '' : qualified.slice(0, colon + 1);
        }
        handlers.open(name(qualified), attributes);
      },
      close: (qualified) => handlers.close(name(qualified)),
      text: handlers.text,
      // Handed on as it is, not wrapped: it is called for every cell of a sheet, and a wrapper's call cost a tenth of the scan (issue 18).
      element: handlers.element?.bind(handlers),
    },
    MAX_DEPTH,
    tooDeep,
  );
  const refuse = (err: Error) => {
    const at = where();
    // saxes quotes what it met (an entity name, a character): bounded and escaped, and not kept as the cause.
    return new SourceError('WRONG_FORMAT', `${file}: part ${partName(part)} is not well-formed XML${at ? ` ${at}` : ''} (${boundText(err.message, 120)}); the workbook is damaged — export it again`, { file, setting: 'type' });
  };
  // A handler's throw ends the read; it is that error the caller sees. A syntax error becomes WRONG_FORMAT.
  const bytes = handlers.bytes;
  const shortcut: ByteShortcut | undefined = bytes && {
    ready: () => scanner.idle && bytes.ready(),
    take: (x, from) => bytes.take(x, from),
    resume: (x, from) => bytes.resume(x, from),
  };
  try {
    for await (const piece of typeof text === 'function' ? text(shortcut) : text) {
      if (piece !== '') scanner.write(piece);
      yield;
    }
    scanner.close();
  } catch (err) {
    if (err instanceof XmlSyntaxError) throw refuse(err);
    throw err;
  }
}

/** Parse a whole (small) part, for the parts read before any row. */
export async function readXml(file: string, part: string, text: Parameters<typeof parseXml>[2], handlers: XmlHandlers): Promise<void> {
  for await (const _ of parseXml(file, part, text, handlers)) void _;
}
