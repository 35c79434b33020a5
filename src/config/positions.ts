import { isMap, isPair, isScalar, isSeq, type Document, type LineCounter, type Node } from 'yaml';

/** A parsed YAML file with what is needed to turn an option path into a line. */
export interface SourceFile {
  file: string;
  doc: Document;
  lineCounter: LineCounter;
}

/**
 * The 1-based line of the option at `path`, or of its nearest existing parent
 * when the option itself is absent (a missing field is reported where its
 * object starts). With `keyOfLast`, points at the key of the last segment
 * (for unknown keys) instead of its value.
 */
export function lineOf(src: SourceFile, path: readonly PropertyKey[], keyOfLast = false): number | null {
  let node: unknown = src.doc.contents;
  let line = lineOfNode(src, node);
  // Line of the key that holds `node`: a missing option is reported there.
  let holder = line;
  for (let i = 0; i < path.length; i++) {
    const seg = path[i];
    const last = i === path.length - 1;
    if (isMap(node)) {
      const pair = node.items.find((p) => isPair(p) && isScalar(p.key) && String(p.key.value) === String(seg));
      if (!pair) return holder ?? line;
      if (last && keyOfLast) return lineOfNode(src, pair.key) ?? line;
      node = pair.value;
      holder = lineOfNode(src, pair.key) ?? line;
      line = lineOfNode(src, pair.value) ?? holder;
    } else if (isSeq(node) && typeof seg === 'number') {
      node = node.items[seg];
      if (node === undefined) return line;
      line = lineOfNode(src, node) ?? line;
      holder = line;
    } else {
      return line;
    }
  }
  return line;
}

function lineOfNode(src: SourceFile, node: unknown): number | null {
  const range = (node as Node | null | undefined)?.range;
  if (!range) return null;
  return src.lineCounter.linePos(range[0]).line;
}
