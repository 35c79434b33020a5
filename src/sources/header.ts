import type { SourceConfig } from './config.js';

/** Builds the cleaner of header cells: BOM/zero-width marks, wrapping quotes, annotations and outer spaces go. */
export function headerCleaner(source: SourceConfig): (cell: string) => string {
  const patterns = source.header.strip_patterns.map((p) => new RegExp(p, 'u'));
  return (cell) => {
    let s = cell.replace(/[\uFEFF\u200B]/g, '').trim();
    // Quotes left around a cell by a writer that quoted twice, e.g. "'SKU'" or '"Name"'.
    for (let m = /^(["'“「])(.*)(["'”」])$/su.exec(s); m; m = /^(["'“「])(.*)(["'”」])$/su.exec(s)) s = m[2]!.trim();
    for (const p of patterns) s = s.replace(p, '').trim();
    return s;
  };
}

/** Clean a header row and drop trailing empty columns. */
export function cleanHeader(cells: string[], clean: (cell: string) => string): string[] {
  const names = cells.map(clean);
  while (names.length > 0 && names[names.length - 1] === '') names.pop();
  return names;
}

/** True when every cell of a row is empty (a blank line; never a record). */
export function isBlankRow(cells: string[]): boolean {
  for (const c of cells) if (c !== '' && c.trim() !== '') return false;
  return true;
}
