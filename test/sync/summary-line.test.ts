import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { emptySummary, logSummary } from '../../src/sync/outcome.js';

/** The one `sync.summary` line names its dataset once: the dataset's child logger binds it, the summary's own field is not logged again. */
describe('sync.summary line', () => {
  it('carries "dataset" once (raw JSON, as a log shipper reads it)', () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) }).child({ dataset: 'shop-1' });
    logSummary(logger, { ...emptySummary('shop-1', 'e.csv'), result: 'unchanged' });
    expect(lines).toHaveLength(1);
    expect(lines[0]!.match(/"dataset":/g)).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ event: 'sync.summary', dataset: 'shop-1', result: 'unchanged', file: 'e.csv' });
  });
});
