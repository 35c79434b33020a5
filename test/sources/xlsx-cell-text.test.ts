import { describe, expect, it } from 'vitest';
import { serialDateText } from '../../src/sources/xlsx/cell-text.js';

/** The serial a writer (exceljs, Excel) stores for a UTC wall time: days since 1899-12-30 as a float. */
const serialOf = (ms: number) => String(ms / 86_400_000 + 25_569);

describe('a date cell serial as wall time', () => {
  it('rounds a half second up, before 1970 as after (the float serial comes back a hair under it)', () => {
    // Found by the exceljs agreement property in xlsx-reader.test.ts: 19:30:57.5 read as 19:30:57.
    expect(serialDateText(serialOf(Date.UTC(1956, 10, 6, 19, 30, 57, 500)), false)).toBe('1956-11-06T19:30:58');
    expect(serialDateText(serialOf(Date.UTC(2024, 2, 1, 8, 0, 12, 500)), false)).toBe('2024-03-01T08:00:13');
  });

  it('rounds anything under a half second down', () => {
    expect(serialDateText(serialOf(Date.UTC(1956, 10, 6, 19, 30, 57, 499)), false)).toBe('1956-11-06T19:30:57');
    expect(serialDateText(serialOf(Date.UTC(2024, 2, 1, 8, 0, 12, 499)), false)).toBe('2024-03-01T08:00:12');
  });
});
