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
  if (isShortestNumber(v)) return v;
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
  // Float serials round to the millisecond (what the serial stands for: 57.5 s comes back as 57.49999… s), then to
  // the second, as Excel shows them; rounded in one step, a half second before 1970 fell to the second below.
  const ms = Math.round(Math.round((serial - UNIX_EPOCH_SERIAL + (date1904 ? EPOCH_1904_OFFSET : 0)) * DAY_MS) / 1000) * 1000;
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

/**
 * Whether `v` is already what String(Number(v)) gives, without converting
 * (a fifth of the cells of a sheet are numbers like 12, -19 and 2.01; the
 * conversion there and back cost 5% of a read, issue 18): an optional minus,
 * an integer part without leading zeros, a fraction without trailing zeros,
 * at least 0.1 in size and at most 15 significant digits. Any two decimals
 * of at most 15 significant digits are different doubles, so the shortest
 * text of that double is `v` itself, and in plain notation at that size.
 */
export function isShortestNumber(v: string): boolean {
  const n = v.length;
  let i = v.charCodeAt(0) === 0x2d ? 1 : 0; // -
  const first = v.charCodeAt(i);
  let point = false;
  if (first === 0x30) {
    // 0 alone (not -0), or 0. then a digit other than 0
    if (i + 1 === n) return i === 0;
    if (v.charCodeAt(i + 1) !== 0x2e) return false;
    const d = v.charCodeAt(i + 2);
    if (!(d >= 0x31 && d <= 0x39)) return false;
    point = true;
    i += 2;
  } else if (!(first >= 0x31 && first <= 0x39)) return false;
  let digits = 0;
  for (; i < n; i++) {
    const c = v.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) digits++;
    else if (c === 0x2e && !point) point = true;
    else return false;
  }
  const last = v.charCodeAt(n - 1);
  return digits <= 15 && last !== 0x2e && !(point && last === 0x30);
}
