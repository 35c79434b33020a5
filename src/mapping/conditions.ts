import type { CellTest, Condition } from './config.js';
import type { HeaderIndex } from './columns.js';
import { wordKey } from './transforms.js';

/** A compiled condition over one row's cells. */
export type CellPredicate = (cells: string[]) => boolean;

function cellTest(test: CellTest, header: HeaderIndex, field: string, matchCase: boolean): CellPredicate {
  const { index } = header.resolve(test.column, field);
  if (test.empty !== undefined) {
    const wanted = test.empty;
    return (cells) => ((cells[index] ?? '').trim() === '') === wanted;
  }
  const key = wordKey(matchCase);
  const words = new Set(test.one_of!.map(key));
  return (cells) => words.has(key(cells[index] ?? ''));
}

function condition(c: Condition, header: HeaderIndex, field: string, matchCase: boolean): CellPredicate {
  if (c.all !== undefined) {
    const parts = c.all.map((t) => cellTest(t, header, field, matchCase));
    return (cells) => parts.every((p) => p(cells));
  }
  if (c.any !== undefined) {
    const parts = c.any.map((t) => cellTest(t, header, field, matchCase));
    return (cells) => parts.some((p) => p(cells));
  }
  return cellTest(c as CellTest, header, field, matchCase);
}

/**
 * A boolean from several columns: `all` (every condition true) or `any` (at
 * least one), e.g. Square's sellable items are Sellable = Y and Archived = N.
 * Columns are resolved against the file's header now, so a missing one is a
 * file-level error before any row is read.
 */
export function compileConditions(kind: 'all' | 'any', conditions: Condition[], header: HeaderIndex, field: string, matchCase: boolean): CellPredicate {
  const parts = conditions.map((c) => condition(c, header, field, matchCase));
  return kind === 'all' ? (cells) => parts.every((p) => p(cells)) : (cells) => parts.some((p) => p(cells));
}
