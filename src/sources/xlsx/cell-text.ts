/**
 * XLSX cell values → the text a CSV export of the same sheet would hold, so
 * that one mapping serves both formats. Numbers: JavaScript's shortest
 * round-trip form (4900000000000, 0.1, -3); dates (cells with a date format):
 * `YYYY-MM-DD`, or `YYYY-MM-DDTHH:MM:SS` when there is a time, as the wall
 * time shown in the sheet (no zone); booleans: TRUE/FALSE; formulas: their
 * cached result; errors: their text (#N/A); rich text: its plain text.
 */

const XSTRING = /_x([0-9A-Fa-f]{4})_/g;

/**
 * Undo the escape OOXML strings use for characters XML cannot hold
 * (ST_Xstring: a carriage return is written `_x000D_`, a literal `_x` as `_x005F_x`).
 */
export function unescapeXstring(s: string): string {
  return s.includes('_x') ? s.replace(XSTRING, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))) : s;
}

/** A numeric cell's stored value as text ('' when it is not a number). */
export function numberText(v: string): string {
  const n = Number(v);
  return v.length > 0 && Number.isFinite(n) ? String(n) : '';
}

const DAY_MS = 24 * 3600 * 1000;
// 1900-01-00 is serial 0 and Excel counts 1900 as a leap year, so from March 1900 on the Unix epoch is serial 25569.
const UNIX_EPOCH_SERIAL = 25569;
const EPOCH_1904_OFFSET = 1462;

/** A date-formatted cell's serial as the sheet's wall time; '' when it is not a number. */
export function serialDateText(v: string, date1904: boolean): string {
  const serial = Number(v);
  if (v.length === 0 || !Number.isFinite(serial)) return '';
  // Float serials round to the second, as Excel shows them.
  const ms = Math.round(((serial - UNIX_EPOCH_SERIAL + (date1904 ? EPOCH_1904_OFFSET : 0)) * DAY_MS) / 1000) * 1000;
  return wallTimeText(new Date(ms));
}

/** A `t="d"` cell (an ISO 8601 date, strict OOXML) as the sheet's wall time: the time as written, any zone offset dropped. */
export function isoDateText(v: string): string {
  const wall = /^(\d{4}-\d\d-\d\d)(?:T(\d\d:\d\d(?::\d\d(?:\.\d+)?)?))?/.exec(v);
  if (!wall) return v;
  const d = new Date(`${wall[1]}T${wall[2] ?? '00:00'}Z`);
  return Number.isNaN(d.getTime()) ? v : wallTimeText(new Date(Math.round(d.getTime() / 1000) * 1000));
}

const pad = (n: number) => (n < 10 ? `0${n}` : String(n));

function wallTimeText(t: Date): string {
  if (Number.isNaN(t.getTime())) return '';
  const day = `${t.getUTCFullYear()}-${pad(t.getUTCMonth() + 1)}-${pad(t.getUTCDate())}`;
  if (t.getUTCHours() === 0 && t.getUTCMinutes() === 0 && t.getUTCSeconds() === 0) return day;
  return `${day}T${pad(t.getUTCHours())}:${pad(t.getUTCMinutes())}:${pad(t.getUTCSeconds())}`;
}
