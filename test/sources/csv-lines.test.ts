import { describe, expect, it } from 'vitest';
import { readText } from './helpers.js';

describe('CSV rows and line numbers', () => {
  it('numbers rows by physical line, counting embedded CRLF and LF newlines, blank lines and the header', async () => {
    const r = await readText('SKU,Name,Code\r\nA-1,"Apple\r\npie",apple\r\n\r\nA-2,"Ba\nna""na""",banana\r\nA-3,Cherry,\r\n');
    expect(r.row_errors.map((e) => [e.line, e.column, e.code])).toEqual([[7, 'Code', 'INVALID_RECORD']]);
    expect(r.rejected?.code).toBe('ROW_ERRORS');
  });

  it('gives records with their lines when the file is good', async () => {
    const r = await readText('SKU,Name,Code\nA-1,"Apple\npie",apple\nA-2,"Ba""na""na",banana\n');
    expect(r.rejected).toBeNull();
    expect(r.lines).toEqual([2, 4]);
    expect(r.records[1]).toEqual({ record_id: 'A-2', display_name: 'Ba"na"na', api_value: 'banana', aliases: [], attributes: {}, active: true });
  });

  it('names both lines of a duplicate record key', async () => {
    const r = await readText('SKU,Name,Code\nA-1,a,a\nA-2,b,b\nA-1,c,c\n');
    expect(r.row_errors).toEqual([
      expect.objectContaining({ line: 4, column: 'record_id', code: 'DUPLICATE_KEY', reason: expect.stringContaining('line 2') }),
    ]);
    expect(r.records).toEqual([]);
  });
});
