import { afterEach, describe, expect, it } from 'vitest';
import { DatasetClient } from '../../src/api/client.js';
import { canonicalJson } from '../../src/model/canonical.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { recordJson } from '../../src/model/record-json.js';
import { Secret } from '../../src/secret.js';
import { rec, recs, scenario, type Scenario } from './harness.js';

/**
 * A6 allows an attribute named `__proto__`; one made by hand in the portal must
 * survive the read (GET /records through the wire schema) and a replace that
 * carries the record over (ownership: source keeps records the connector does
 * not own, sent back as read).
 */

let s: Scenario | undefined;
afterEach(async () => {
  await s?.close();
  s = undefined;
});

const portal = (): DatasetRecord => ({ ...rec('p-1'), attributes: JSON.parse('{"__proto__":"hand-made","note":"kept"}') as DatasetRecord['attributes'] });
const ownAttrs = (r: DatasetRecord | undefined) => (r ? Object.entries(r.attributes) : []);

describe('an attribute named __proto__', () => {
  it('is read from the server as an own key, and recordJson and canonicalJson agree on it', async () => {
    s = await scenario({ records: [...recs(3), portal()] });
    const records: DatasetRecord[] = [];
    const client = new DatasetClient({ baseUrl: s.ds.api.base_url, datasetId: s.ds.api.dataset_id, key: new Secret(s.key) });
    for await (const r of client.listRecords()) records.push(r);
    const p = records.find((r) => r.record_id === 'p-1')!;
    expect(ownAttrs(p)).toEqual([
      ['__proto__', 'hand-made'],
      ['note', 'kept'],
    ]);
    expect(recordJson(p)).toBe(canonicalJson(p));
    expect(recordJson(p)).toContain('"attributes":{"__proto__":"hand-made","note":"kept"}');
  });

  it('survives a replace that carries the portal record over', async () => {
    s = await scenario({ records: [...recs(30), portal()], policy: { replace: { max_per_record_changes: 2, job_poll_ms: 100 } }, mapping: { fields: { record_id: 'SKU', display_name: { column: 'Name', transforms: ['trim'] }, api_value: 'Code' } } });
    expect((await s.engine.sync(s.ds, { file: await s.writeExport(recs(30)) })).result).toBe('unchanged');
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(recs(30).map((r) => ({ ...r, display_name: `New ${r.record_id}` }))) });
    expect(sum, sum.message ?? '').toMatchObject({ result: 'published', path: 'replace' });
    expect(ownAttrs(s.published().find((r) => r.record_id === 'p-1'))).toEqual([
      ['__proto__', 'hand-made'],
      ['note', 'kept'],
    ]);
  });
});
