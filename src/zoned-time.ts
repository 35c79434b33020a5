/** The calendar fields of an instant in an IANA time zone, zero-padded, with the zone's offset (`+09:00`). */
export interface ZonedParts {
  year: string;
  month: string;
  day: string;
  hour: string;
  minute: string;
  second: string;
  millisecond: string;
  offset: string;
}

/** `ms` since the epoch as it reads on a clock in `timeZone` (archived names, pretty log lines). */
export function zonedParts(ms: number, timeZone: string): ZonedParts {
  const parts = new Intl.DateTimeFormat('en-GB', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    fractionalSecondDigits: 3,
    hourCycle: 'h23',
    timeZoneName: 'longOffset',
  }).formatToParts(new Date(ms));
  const p = (t: Intl.DateTimeFormatPartTypes, missing: string) => parts.find((x) => x.type === t)?.value ?? missing;
  return {
    year: p('year', '0000'),
    month: p('month', '00'),
    day: p('day', '00'),
    hour: p('hour', '00'),
    minute: p('minute', '00'),
    second: p('second', '00'),
    millisecond: p('fractionalSecond', '000'),
    // "GMT" alone is UTC itself.
    offset: p('timeZoneName', 'GMT').replace(/^GMT/, '') || '+00:00',
  };
}
