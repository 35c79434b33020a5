import { describe, expect, it } from 'vitest';
import { harness, rec, recs, code } from './helpers.js';

describe('records (A6–A9, A31, A33, A34)', () => {
  it('POST publishes a new version: 201, write result, ETag', async () => {
    const h = await harness();
    const r = await h.call('POST', '/records', { body: { record_id: 'A-1', display_name: 'Apple', api_value: 'apple' } });
    expect(r.status).toBe(201);
    expect(r.headers.get('etag')).toBe('"v1"');
    expect(r.body).toEqual({
      record: { record_id: 'A-1', display_name: 'Apple', api_value: 'apple', aliases: [], attributes: {}, active: true },
      version: 1,
      status: 'published',
      staged: false,
      publish_denied: false,
    });
    const g = await h.call('GET', '/records/A-1');
    expect(g.body).toEqual({ record: r.body.record });
    expect(g.headers.get('etag')).toBe('"v1"');
  });

  it('POST of an existing record_id is 422 VALIDATION_FAILED with a row', async () => {
    const h = await harness({ records: [rec('a')] });
    const r = await h.call('POST', '/records', { body: rec('a') });
    expect([r.status, code(r)]).toEqual([422, 'VALIDATION_FAILED']);
    expect(r.body.error.details.errors[0]).toMatchObject({ row: 1, record_id: 'a', field: 'record_id' });
  });

  it('A6 validation: bad fields, unknown fields (A34), bad attributes', async () => {
    const h = await harness();
    const cases: unknown[] = [
      { ...rec('a'), display_name: '' },
      { ...rec('bad id!') },
      { ...rec('a'), api_value: 'x'.repeat(501) },
      { ...rec('a'), aliases: Array.from({ length: 21 }, () => 'x') },
      { ...rec('a'), attributes: { 'bad-key': 1 } },
      { ...rec('a'), attributes: { nested: { no: 1 } } },
      { ...rec('a'), color: 'red' },
      { ...rec('a'), active: 'yes' },
    ];
    for (const body of cases) {
      const r = await h.call('POST', '/records', { body });
      expect([r.status, code(r)], JSON.stringify(body)).toEqual([422, 'VALIDATION_FAILED']);
      expect(r.body.error.details.errors.length).toBeGreaterThan(0);
      expect(r.body.error.details.errors[0].row).toBe(1);
    }
    expect(h.emulator.describe('shop-1').active_version).toBe(0);
  });

  it('PATCH replaces each given field whole (A33) and 404 RECORD_NOT_FOUND for a missing record', async () => {
    const h = await harness({ records: [rec('a', { aliases: ['x', 'y'], attributes: { stock: 1, color: 'red' } })] });
    const r = await h.call('PATCH', '/records/a', { body: { attributes: { stock: 2 } } });
    expect(r.status).toBe(200);
    expect(r.body.record).toEqual(rec('a', { aliases: ['x', 'y'], attributes: { stock: 2 } }));
    expect(r.body.version).toBe(2);
    expect(r.headers.get('etag')).toBe('"v2"');
    expect(code(await h.call('PATCH', '/records/zz', { body: { display_name: 'n' } }))).toBe('RECORD_NOT_FOUND');
    expect(code(await h.call('PATCH', '/records/a', { body: { record_id: 'b' } }))).toBe('VALIDATION_FAILED');
    expect(code(await h.call('PATCH', '/records/a', { body: { display_name: '' } }))).toBe('VALIDATION_FAILED');
  });

  it('DELETE answers the write result with record null; 404 for a missing record', async () => {
    const h = await harness({ records: [rec('a'), rec('b')] });
    const r = await h.call('DELETE', '/records/a');
    expect([r.status, r.body]).toEqual([200, { record: null, version: 2, status: 'published', staged: false, publish_denied: false }]);
    const m = await h.call('DELETE', '/records/a');
    expect([m.status, code(m)]).toEqual([404, 'RECORD_NOT_FOUND']);
    expect(h.emulator.counters.recordWrites).toBe(1);
  });

  it('A34: unknown query parameters are refused', async () => {
    const h = await harness();
    expect(code(await h.call('GET', '/records?page=2'))).toBe('VALIDATION_FAILED');
    expect(code(await h.call('POST', '/records?dry_run=true', { body: rec('a') }))).toBe('VALIDATION_FAILED');
    expect(code(await h.call('POST', '/records?publish=maybe', { body: rec('a') }))).toBe('VALIDATION_FAILED');
    expect(code(await h.call('GET', '/versions?all=1'))).toBe('VALIDATION_FAILED');
    expect(code(await h.call('GET', '/records?source=active'))).toBe('VALIDATION_FAILED');
  });

  it('a body that is not JSON is 400 BAD_REQUEST', async () => {
    const h = await harness();
    const r = await h.call('POST', '/records', { raw: '{nope', headers: { 'content-type': 'application/json' } });
    expect([r.status, code(r)]).toEqual([400, 'BAD_REQUEST']);
  });
});

describe('paging (A7, A8)', () => {
  it('pages in record_id byte order with next_cursor, limit default 100 and max 1000', async () => {
    // Byte order: upper case before lower case, digits before letters.
    const ids = ['b', 'B', 'a', 'A', '1', 'a.1', 'a-1', 'a:1', 'a_1'];
    const h = await harness({ records: [...recs(250), ...ids.map((i) => rec(i))] });
    const first = await h.call('GET', '/records');
    expect(first.body.records).toHaveLength(100);
    expect(first.headers.get('etag')).toBe('"v1"');
    const all: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r: any = await h.call('GET', `/records?limit=37${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      all.push(...r.body.records.map((x: { record_id: string }) => x.record_id));
      cursor = r.body.next_cursor;
      pages++;
    } while (cursor);
    const expected = [...recs(250).map((r) => r.record_id), ...ids].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
    expect(all).toEqual(expected);
    expect(pages).toBe(Math.ceil(259 / 37));
    expect((await h.call('GET', '/records?limit=1000')).body.records).toHaveLength(259);
    expect(code(await h.call('GET', '/records?limit=1001'))).toBe('VALIDATION_FAILED');
    expect(code(await h.call('GET', '/records?limit=0'))).toBe('VALIDATION_FAILED');
    expect(code(await h.call('GET', '/records?limit=abc'))).toBe('VALIDATION_FAILED');
  });

  it('next_cursor is null on the last page, also when the page is exactly full', async () => {
    const h = await harness({ records: recs(10) });
    const r = await h.call('GET', '/records?limit=10');
    expect(r.body.next_cursor).toBeNull();
    const p = await h.call('GET', '/records?limit=5');
    expect(p.body.next_cursor).toBe('r0005');
    const q = await h.call('GET', '/records?limit=5&cursor=r0005');
    expect(q.body.records.map((x: any) => x.record_id)).toEqual(['r0006', 'r0007', 'r0008', 'r0009', 'r0010']);
    expect(q.body.next_cursor).toBeNull();
    // A cursor that no longer exists still pages from its position.
    const gone = await h.call('GET', '/records?limit=2&cursor=r0005a');
    expect(gone.body.records[0].record_id).toBe('r0006');
  });
});

describe('If-Match (A2)', () => {
  it('412 PRECONDITION_FAILED with current_etag on a stale ETag; a matching one passes', async () => {
    const h = await harness({ records: [rec('a')] });
    const stale = await h.call('POST', '/records', { body: rec('b'), headers: { 'if-match': '"v0"' } });
    expect([stale.status, code(stale)]).toEqual([412, 'PRECONDITION_FAILED']);
    expect(stale.body.error.details.current_etag).toBe('"v1"');
    const ok = await h.call('POST', '/records', { body: rec('b'), headers: { 'if-match': '"v1"' } });
    expect(ok.status).toBe(201);
    for (const [m, p, body] of [
      ['PATCH', '/records/a', { display_name: 'z' }],
      ['DELETE', '/records/a', undefined],
      ['PUT', '/records', { records: [] }],
      ['POST', '/versions/9/publish', {}],
      ['DELETE', '/versions/9', undefined],
    ] as const) {
      const r = await h.call(m, p, { body, headers: { 'if-match': '"v1"' } });
      expect([r.status, code(r)], `${m} ${p}`).toEqual([412, 'PRECONDITION_FAILED']);
    }
    // Reads ignore If-Match.
    expect((await h.call('GET', '/records', { headers: { 'if-match': '"v0"' } })).status).toBe(200);
  });
});
