import { describe, expect, it } from 'vitest';
import { bodyRowLines, serverRowErrors, uploadRowLines, type LineLookup } from '../../src/sync/executor/server-rows.js';

// A3: `row` is 1-based over the records array (JSON) or over the data lines of a file (header excluded).
describe('server row errors go to the source file line they came from (A3)', () => {
  const known = new Map([['A-1', 2], ['A-2', 3], ['A-3', 5]]); // A-3 follows a blank line
  let lookups = 0;
  const lines: LineLookup = (ids) => {
    lookups++;
    return new Map([...ids].flatMap((id) => (known.has(id) ? [[id, known.get(id)!] as const] : [])));
  };

  it('an error naming a record_id goes to that record\'s line', () => {
    expect(serverRowErrors('f.csv', lines, [{ row: 9, record_id: 'A-2', field: 'api_value', message: 'bad' }], uploadRowLines(1))).toEqual([
      { file: 'f.csv', line: 3, column: 'api_value', value: 'A-2', reason: 'server: bad', code: 'INVALID_RECORD' },
    ]);
  });

  it('an upload\'s error without a record_id: data lines counted after the header, plus the preamble', () => {
    const errs = [{ row: 1, record_id: null, field: 'record_id', message: 'missing' }, { row: 4, message: 'bad' }];
    expect(serverRowErrors('f.csv', lines, errs, uploadRowLines(1)).map((r) => r.line)).toEqual([2, 5]);
    // Two preamble lines: the header is line 3, so data row 1 is line 4.
    expect(serverRowErrors('f.csv', lines, errs, uploadRowLines(3)).map((r) => r.line)).toEqual([4, 7]);
  });

  it('a JSON body\'s error without a record_id: the row-th record sent, at its source line', () => {
    let built = 0;
    const body = ['A-1', 'hand-1', 'A-3'];
    const rowLines = bodyRowLines((rows) => (built++, new Map([...rows].filter((r) => r <= body.length).map((r) => [r, body[r - 1]!] as const))), lines);
    const errs = [{ row: 3, record_id: null, message: 'bad' }, { row: 2, message: 'carried over, not from the file' }, { row: 7, message: 'beyond' }];
    lookups = 0;
    expect(serverRowErrors('f.csv', lines, errs, rowLines).map((r) => r.line)).toEqual([5, 0, 0]);
    // One pass over the body and one over the source, for all the rows at once (issue 18: neither is held in memory).
    expect({ built, lookups }).toEqual({ built: 1, lookups: 2 });
  });

  it('a server message quoting the refused cell is logged only bounded and escaped (issue 11)', () => {
    const [e] = serverRowErrors('f.csv', lines, [{ record_id: 'A-1', field: 'name', message: `value "\u001b[2J${'x'.repeat(5000)}" is too long` }]);
    expect(e!.reason.length).toBeLessThan(320);
    expect(e!.reason).not.toMatch(/\u001b/u);
  });

  it('without a numbering the line is unknown (0)', () => {
    expect(serverRowErrors('f.csv', lines, [{ row: 2, message: 'bad' }]).map((r) => r.line)).toEqual([0]);
  });
});
