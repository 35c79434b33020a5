import type { DATE_ORDERS } from './transform-config.js';
import { ValueError, asText, type Transform } from './value.js';
import { excerpt } from '../model/excerpt.js';

export type DateOrder = (typeof DATE_ORDERS)[number];

// A time of day after the date (XLSX writes "T", spreadsheets and POS exports a space); dropped.
const TIME = /(?:T|\s+)\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?$/;
const YEAR_FIRST = /^(\d{4})([-/.])(\d{1,2})\2(\d{1,2})$/;
const YEAR_FIRST_JA = /^(\d{4})年(\d{1,2})月(\d{1,2})日$/;
const COMPACT = /^(\d{4})(\d{2})(\d{2})$/;
const YEAR_LAST = /^(\d{1,2})([-/.])(\d{1,2})\2(\d{4})$/;

const EXAMPLE: Record<DateOrder, string> = { ymd: '2024-03-15, 2024/3/15 or 20240315', dmy: '15.03.2024 or 15/3/2024', mdy: '3/15/2024' };

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

const pad = (n: number) => (n < 10 ? `0${n}` : String(n));

/** Year, month and day read from the text in the given order, or null when it is not a date written that way. */
export function readDate(text: string, order: DateOrder): { y: number; m: number; d: number } | null {
  const s = text.replace(TIME, '');
  // A date that starts with a four-digit year is year-month-day in every convention (and how XLSX dates read).
  const first = YEAR_FIRST.exec(s);
  if (first) return { y: +first[1]!, m: +first[3]!, d: +first[4]! };
  const ja = YEAR_FIRST_JA.exec(s);
  if (ja) return { y: +ja[1]!, m: +ja[2]!, d: +ja[3]! };
  if (order === 'ymd') {
    const compact = COMPACT.exec(s);
    return compact ? { y: +compact[1]!, m: +compact[2]!, d: +compact[3]! } : null;
  }
  const last = YEAR_LAST.exec(s);
  if (!last) return null;
  const [a, b, y] = [+last[1]!, +last[3]!, +last[4]!];
  return order === 'dmy' ? { y, m: b, d: a } : { y, m: a, d: b };
}

/**
 * Parse a date into `YYYY-MM-DD`. Two-digit years and dates that do not
 * exist (2024-02-30) are row errors, never guessed; empty stays empty.
 */
export function dateParser(order: DateOrder): Transform {
  return (v) => {
    if (v === null) return null;
    const s = asText(v).trim();
    if (s === '') return null;
    const ymd = readDate(s, order);
    if (ymd === null) throw new ValueError('TRANSFORM_FAILED', `${excerpt(s)} is not a date written as ${EXAMPLE[order]} (date order ${order})`, s);
    const { y, m, d } = ymd;
    if (y < 1000 || m < 1 || m > 12 || d < 1 || d > daysIn(y, m)) throw new ValueError('TRANSFORM_FAILED', `${excerpt(s)} is not a date that exists (read as year ${y}, month ${m}, day ${d})`, s);
    return `${y}-${pad(m)}-${pad(d)}`;
  };
}
