import { describe, expect, it } from 'vitest';
import iconv from 'iconv-lite';
import ExcelJS from 'exceljs';
import { harness, rec, code, type Harness } from './helpers.js';

function form(file: Uint8Array, filename: string, fields: Record<string, string> = {}): FormData {
  const fd = new FormData();
  fd.append('file', new Blob([file]), filename);
  for (const [k, v] of Object.entries(fields)) fd.append(k, v);
  return fd;
}

async function upload(h: Harness, fd: FormData, headers: Record<string, string> = {}) {
  const r = await h.call('POST', '/imports', { raw: fd, headers });
  if (r.status !== 202) return { r, job: null };
  return { r, job: h.emulator.job(r.body.job.job_id) };
}

const MAPPING = JSON.stringify({
  record_id: 'SKU',
  display_name: '商品名',
  api_value: 'Code',
  aliases: 'Aliases',
  active: 'Active',
  'attributes.stock': 'Stock',
});
const JA_CSV = 'SKU,商品名,Code,Aliases,Active,Stock\nA-1,りんご,apple,林檎|アップル,yes,12\nA-2,みかん,orange,,0,\n';
const KO_CSV = 'SKU,商品名,Code,Aliases,Active,Stock\nA-1,사과,apple,애플,true,3\n';

describe('upload (A14)', () => {
  for (const [encoding, text, bom] of [
    ['utf-8', JA_CSV, false],
    ['utf-8', JA_CSV, true],
    ['shift_jis', JA_CSV, false],
    ['cp932', JA_CSV, false],
    ['euc-jp', JA_CSV, false],
    ['euc-kr', KO_CSV, false],
  ] as const) {
    it(`CSV in ${encoding}${bom ? ' with BOM' : ''} with a mapping`, async () => {
      const h = await harness();
      const bytes = Buffer.concat([bom ? Buffer.from([0xef, 0xbb, 0xbf]) : Buffer.alloc(0), iconv.encode(text, encoding)]);
      const fields: Record<string, string> = { mapping: MAPPING };
      if (encoding !== 'utf-8' || bom) fields.encoding = encoding;
      const { r, job } = await upload(h, form(bytes, 'export.csv', fields));
      expect(r.status).toBe(202);
      expect(job?.status).toBe('PUBLISHED');
      const records = h.emulator.records('shop-1');
      if (encoding === 'euc-kr') {
        expect(records).toEqual([rec('A-1', { display_name: '사과', api_value: 'apple', aliases: ['애플'], attributes: { stock: '3' } })]);
      } else {
        expect(records).toEqual([
          rec('A-1', { display_name: 'りんご', api_value: 'apple', aliases: ['林檎', 'アップル'], attributes: { stock: '12' } }),
          rec('A-2', { display_name: 'みかん', api_value: 'orange', active: false }),
        ]);
      }
    });
  }

  it('without a mapping the header must name the record fields, else 422 MAPPING_REQUIRED', async () => {
    const h = await harness();
    const ok = 'record_id,display_name,api_value,aliases,active,attributes.color\nb,B,b,x|y,no,red\n';
    const { job } = await upload(h, form(Buffer.from(ok), 'a.csv'));
    expect(job?.status).toBe('PUBLISHED');
    expect(h.emulator.records('shop-1')).toEqual([rec('b', { display_name: 'B', api_value: 'b', aliases: ['x', 'y'], active: false, attributes: { color: 'red' } })]);
    const { r } = await upload(h, form(Buffer.from(JA_CSV), 'a.csv'));
    expect([r.status, code(r)]).toEqual([422, 'MAPPING_REQUIRED']);
  });

  it('bad rows: the job ends FAILED with errors numbered over data lines (header excluded)', async () => {
    const h = await harness();
    const csv = 'SKU,商品名,Code,Aliases,Active,Stock\nA-1,ok,a,,yes,1\nA 2,bad id,b,,yes,1\nA-3,,c,,yes,1\nA-4,x,d,,perhaps,1\n';
    const { r, job } = await upload(h, form(Buffer.from(csv), 'a.csv', { mapping: MAPPING }));
    expect(r.status).toBe(202);
    expect(job?.status).toBe('FAILED');
    expect(job?.errors.map((e) => [e.row, e.record_id, e.field])).toEqual([
      [2, 'A 2', 'record_id'],
      [3, 'A-3', 'display_name'],
      [4, 'A-4', 'active'],
    ]);
    expect(h.emulator.describe('shop-1').active_version).toBe(0);
  });

  it('mapping, encoding, options and fields are checked at once (422)', async () => {
    const h = await harness();
    const bytes = Buffer.from(JA_CSV);
    const cases: [Record<string, string>, string][] = [
      [{ mapping: '{nope' }, 'VALIDATION_FAILED'],
      [{ mapping: JSON.stringify({ record_id: 'SKU', display_name: 'Nope', api_value: 'Code' }) }, 'VALIDATION_FAILED'],
      [{ mapping: JSON.stringify({ record_id: 'SKU', colour: 'Code' }) }, 'VALIDATION_FAILED'],
      [{ mapping: MAPPING, encoding: 'latin1' }, 'VALIDATION_FAILED'],
      [{ mapping: MAPPING, options: '{"force":true}' }, 'VALIDATION_FAILED'],
      [{ mapping: MAPPING, extra: 'x' }, 'VALIDATION_FAILED'],
    ];
    for (const [fields, expected] of cases) {
      const { r } = await upload(h, form(bytes, 'a.csv', fields));
      expect([r.status, code(r)], JSON.stringify(fields)).toEqual([422, expected]);
    }
    const noFile = new FormData();
    noFile.append('mapping', MAPPING);
    expect(code((await upload(h, noFile)).r)).toBe('VALIDATION_FAILED');
    expect(code(await h.call('POST', '/imports', { body: { file: 'x' } }))).toBe('BAD_REQUEST');
    expect(h.emulator.counters.jobsCreated).toBe(0);
  });

  it('options of an upload: publish false stages the result', async () => {
    const h = await harness();
    const { job } = await upload(h, form(Buffer.from(JA_CSV), 'a.csv', { mapping: MAPPING, options: '{"publish":false}' }));
    expect(job).toMatchObject({ status: 'STAGED', version: 1, reason: 'PUBLISH_DISABLED' });
  });

  it('XLSX: the first sheet by default, or the named sheet; numbers and booleans converted', async () => {
    const wb = new ExcelJS.Workbook();
    const first = wb.addWorksheet('Other');
    first.addRow(['record_id', 'display_name', 'api_value']);
    first.addRow(['o-1', 'Other', 'other']);
    const ws = wb.addWorksheet('在庫');
    ws.addRow(['SKU', '商品名', 'Code', 'Aliases', 'Active', 'Stock']);
    ws.addRow([1001, 'りんご', 'apple', 'a|b', true, 12]);
    ws.addRow([]);
    ws.addRow(['A-2', 'みかん', 'orange', null, 'no', null]);
    const bytes = new Uint8Array(await wb.xlsx.writeBuffer());

    const h = await harness();
    let { job } = await upload(h, form(bytes, 'export.xlsx', { mapping: MAPPING, sheet: '在庫' }));
    expect(job?.status).toBe('PUBLISHED');
    expect(h.emulator.records('shop-1')).toEqual([
      rec('1001', { display_name: 'りんご', api_value: 'apple', aliases: ['a', 'b'], attributes: { stock: 12 } }),
      rec('A-2', { display_name: 'みかん', api_value: 'orange', active: false }),
    ]);
    ({ job } = await upload(h, form(bytes, 'export.xlsx', { options: '{"allow_mass_delete":true}' })));
    expect(job?.status).toBe('PUBLISHED');
    expect(h.emulator.records('shop-1').map((r) => r.record_id)).toEqual(['o-1']);
    const { r } = await upload(h, form(bytes, 'export.xlsx', { mapping: MAPPING, sheet: 'Missing' }));
    expect([r.status, code(r)]).toEqual([422, 'VALIDATION_FAILED']);
    expect(r.body.error.details.sheets).toEqual(['Other', '在庫']);
  });

  it('Idempotency-Key on uploads compares the bytes of every field', async () => {
    const h = await harness();
    h.emulator.configure({ jobDurationMs: 1000 });
    const headers = { 'idempotency-key': 'up-1' };
    const a = await upload(h, form(Buffer.from(JA_CSV), 'a.csv', { mapping: MAPPING }), headers);
    const b = await upload(h, form(Buffer.from(JA_CSV), 'a.csv', { mapping: MAPPING }), headers);
    expect(b.r.headers.get('idempotent-replayed')).toBe('true');
    expect(b.r.body.job.job_id).toBe(a.r.body.job.job_id);
    const c = await upload(h, form(Buffer.from(JA_CSV.replace('12', '13')), 'a.csv', { mapping: MAPPING }), headers);
    expect(code(c.r)).toBe('IDEMPOTENCY_KEY_REUSED');
    const d = await upload(h, form(Buffer.from(JA_CSV), 'a.csv', { mapping: MAPPING, sheet: 'x' }), headers);
    expect(code(d.r)).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(h.emulator.counters.jobsCreated).toBe(1);
  });

  it('two identical uploads with one Idempotency-Key sent at once make one job', async () => {
    const h = await harness();
    const headers = { 'idempotency-key': 'same-time' };
    const [a, b] = await Promise.all([
      h.call('POST', '/imports', { raw: form(Buffer.from(JA_CSV), 'a.csv', { mapping: MAPPING }), headers }),
      h.call('POST', '/imports', { raw: form(Buffer.from(JA_CSV), 'a.csv', { mapping: MAPPING }), headers }),
    ]);
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(a.body.job.job_id).toBe(b.body.job.job_id);
    expect(h.emulator.counters.jobsCreated).toBe(1);
  });
});
