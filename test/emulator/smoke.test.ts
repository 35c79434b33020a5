import { describe, expect, it } from 'vitest';
import { harness, rec, code } from './helpers.js';

describe('smoke', () => {
  it('starts, writes and lists', async () => {
    const h = await harness();
    const w = await h.call('POST', '/records', { body: rec('A-1') });
    expect(w.status).toBe(201);
    expect(w.headers.get('etag')).toBe('"v1"');
    const l = await h.call('GET', '/records');
    expect(l.body.records).toHaveLength(1);
    expect(code(await h.call('GET', '/records/nope'))).toBe('RECORD_NOT_FOUND');
  });
});
