import { describe, expect, it } from 'vitest';
import {
  errorBodySchema,
  etagVersion,
  jobEnvelopeSchema,
  recordPageSchema,
  singleRecordSchema,
  writeResultSchema,
} from '../../src/api/wire.js';

const rec = { record_id: 'A-1', display_name: 'A', api_value: 'a', aliases: [], attributes: {}, active: true };
const job = { job_id: 'j1', status: 'QUEUED', version: null, counts: { added: 0, changed: 0, deleted: 0 }, errors: [], reason: null };

describe('wire schemas read tolerantly', () => {
  it('A1: nested and flat error bodies', () => {
    expect(errorBodySchema.parse({ error: { code: 'DRAFT_PENDING', message: 'm', details: { x: 1 } } })).toEqual({
      code: 'DRAFT_PENDING',
      message: 'm',
      details: { x: 1 },
    });
    expect(errorBodySchema.parse({ code: 'CONFLICT', message: 'm' })).toEqual({ code: 'CONFLICT', message: 'm', details: {} });
  });

  it('A7: records/next_cursor and items/next, unknown fields ignored', () => {
    expect(recordPageSchema.parse({ records: [rec], next_cursor: 'A-1', extra: 1 })).toEqual({ records: [rec], nextCursor: 'A-1' });
    expect(recordPageSchema.parse({ items: [{ ...rec, colour: 'red' }], next: null })).toEqual({ records: [rec], nextCursor: null });
    expect(recordPageSchema.safeParse({ rows: [] }).success).toBe(false);
  });

  it('A31/A32: enveloped and bare record and job', () => {
    expect(singleRecordSchema.parse({ record: rec })).toEqual(rec);
    expect(singleRecordSchema.parse(rec)).toEqual(rec);
    expect(jobEnvelopeSchema.parse({ job }).job_id).toBe('j1');
    expect(jobEnvelopeSchema.parse(job).status).toBe('QUEUED');
  });

  it('A9: write result defaults staged/publish_denied to false; an unknown status is refused', () => {
    expect(writeResultSchema.parse({ record: rec, version: 2, status: 'published' })).toMatchObject({ staged: false, publish_denied: false });
    expect(writeResultSchema.safeParse({ record: rec, version: 2, status: 'queued' }).success).toBe(false);
  });

  it('A8: ETag "v<n>" to a version number', () => {
    expect(etagVersion('"v12"')).toBe(12);
    expect(etagVersion('W/"v3"')).toBe(3);
    expect(etagVersion('"abc"')).toBeNull();
    expect(etagVersion(null)).toBeNull();
  });
});
