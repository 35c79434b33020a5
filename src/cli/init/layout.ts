import { parse } from 'csv-parse/sync';
import { isBlankRow } from '../../sources/header.js';

/** A row as the reader gives it: cells and its 1-based line (CSV physical line, XLSX row number). */
export interface SampleRow {
  cells: string[];
  line: number;
}

export const DELIMITERS = [',', ';', '\t', '|'] as const;
export type Delimiter = (typeof DELIMITERS)[number];

export interface DelimiterGuess {
  delimiter: Delimiter;
  why: string;
  /** How the sample quotes its fields: every field, some, or none. */
  quoting: 'all' | 'some' | 'none';
}

const shown = (d: string) => (d === '\t' ? 'tab' : JSON.stringify(d));

/** Cells after the last non-empty one do not count (spreadsheets pad rows). */
export function rowWidth(cells: string[]): number {
  let w = cells.length;
  while (w > 0 && cells[w - 1]!.trim() === '') w--;
  return w;
}

function mode(values: number[]): { value: number; count: number } {
  const counts = new Map<number, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  let best = { value: 0, count: 0 };
  for (const [value, count] of counts) if (count > best.count || (count === best.count && value > best.value)) best = { value, count };
  return best;
}

/**
 * The field delimiter of CSV text: the one that splits the most lines
 * (quotes respected) into the same number of fields, more than one.
 */
export function guessDelimiter(text: string): DelimiterGuess {
  const lines = text.split(/\r?\n/).slice(0, 200).join('\n');
  let best: { d: Delimiter; widths: number; share: number; rows: number } | null = null;
  for (const d of DELIMITERS) {
    let rows: string[][];
    try {
      rows = parse(lines, { delimiter: d, relax_column_count: true, relax_quotes: true, skip_empty_lines: true }) as string[][];
    } catch {
      continue;
    }
    const widths = rows.map(rowWidth).filter((w) => w > 0);
    const m = mode(widths);
    if (m.value < 2) continue;
    const share = m.count / Math.max(widths.length, 1);
    // More rows of one width first, then more fields.
    if (!best || share * m.value > best.share * best.widths || (share * m.value === best.share * best.widths && m.value > best.widths)) best = { d, widths: m.value, share, rows: widths.length };
  }
  const quoting = quotingOf(text);
  if (!best) return { delimiter: ',', why: 'no delimiter splits most lines into the same number of fields; read with the default "," (CHECK)', quoting };
  return {
    delimiter: best.d,
    why: `${shown(best.d)} splits ${Math.round(best.share * 100)}% of the first ${best.rows} rows into ${best.widths} fields`,
    quoting,
  };
}

function quotingOf(text: string): 'all' | 'some' | 'none' {
  const head = text.slice(0, 64 * 1024);
  if (!head.includes('"')) return 'none';
  const lines = head.split(/\r?\n/).filter((l) => l.length > 0).slice(0, 50);
  return lines.every((l) => l.startsWith('"')) ? 'all' : 'some';
}

function isNumeric(s: string): boolean {
  return /^[+-]?[\d.,\s]+%?$/.test(s) && /\d/.test(s);
}

export interface HeaderGuess {
  /** Index into the rows given. */
  index: number;
  line: number;
  why: string;
  /** The rows before it (preamble), as found. */
  preamble: SampleRow[];
}

/**
 * The header row: the first row about as wide as the table below it, its
 * cells filled, mostly different and not numbers. Rows above it (a version
 * line, a title, a date, blank lines) are preamble.
 */
export function findHeader(rows: SampleRow[]): HeaderGuess | null {
  const filled = rows.filter((r) => !isBlankRow(r.cells));
  if (filled.length === 0) return null;
  const width = mode(filled.map((r) => rowWidth(r.cells))).value;
  for (let i = 0; i < filled.length; i++) {
    const r = filled[i]!;
    const w = rowWidth(r.cells);
    const names = r.cells.slice(0, w).map((c) => c.trim());
    const nonEmpty = names.filter((n) => n !== '');
    if (w < Math.max(2, Math.ceil(width * 0.75)) || nonEmpty.length < w * 0.8) continue;
    // Names may repeat (they are then picked by position), but a header is mostly different names.
    if (new Set(nonEmpty).size < nonEmpty.length * 0.5) continue;
    if (nonEmpty.filter(isNumeric).length > nonEmpty.length * 0.25) continue;
    const index = rows.indexOf(r);
    const preamble = rows.slice(0, index);
    // Counted in lines as skip_lines counts them (blank ones too), not in the sampled rows.
    const above = r.line - 1;
    const why =
      above === 0
        ? `the first row names ${w} columns`
        : `the first row that names ${w} columns, as wide as the table below it; the ${above} line${above === 1 ? '' : 's'} above ${above === 1 ? 'is' : 'are'} preamble`;
    return { index, line: r.line, why, preamble };
  }
  const first = filled[0]!;
  return { index: rows.indexOf(first), line: first.line, why: 'no row looks like a header (names, as wide as the table); the first row is taken: CHECK', preamble: rows.slice(0, rows.indexOf(first)) };
}
