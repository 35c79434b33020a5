import { afterEach, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { recs, scenario, type Scenario } from './harness.js';

/**
 * D7 of review rv18b: the snapshot names the server dataset it mirrors (base URL and dataset id, migration 20), so
 * settings pointed at another one are not taken for the old one when the version numbers agree; a database from
 * before migration 20 takes the current one without a rebuild.
 */

const open: Scenario[] = [];
const others: RunningEmulator[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
  for (const e of others.splice(0)) await e.close();
});

const all = recs(20);
const view = (r: DatasetRecord) => `${r.record_id}|${r.display_name}|${r.api_value}`;
const copy = all.map((r, i) => (i === 4 ? { ...r, display_name: `Copy ${i}` } : r));
const recordReads = (s: Scenario) => s.em.emulator.requests.filter((r) => r.method === 'GET' && /\/records$/.test(r.path)).length;
const changedLogs = (s: Scenario) => s.logs.filter((l) => l.event === 'reconcile.server_changed');

async function synced(): Promise<Scenario> {
  const s = await scenario({});
  open.push(s);
  await s.engine.sync(s.ds, { file: await s.writeExport(all) });
  await s.engine.sync(s.ds, { file: await s.writeExport(all) });
  return s;
}

describe('the server dataset a snapshot mirrors', () => {
  it('is remembered by the first sync', async () => {
    const s = await synced();
    expect(s.db.snapshot('shop-1').server()).toEqual({ baseUrl: s.em.url.replace(/\/+$/, ''), datasetId: 'shop-1' });
  });

  it('a state db without one (before migration 20) takes the current one without a rebuild', async () => {
    const s = await synced();
    s.db.conn.prepare('DELETE FROM dataset_servers').run();
    const rebuiltAt = s.db.snapshot('shop-1').state().rebuiltAt;
    const reads = recordReads(s);
    const r = await s.engine.sync(s.ds, { file: await s.writeExport(all) });
    expect(r.result).toBe('unchanged');
    expect(recordReads(s)).toBe(reads);
    expect(s.db.snapshot('shop-1').state().rebuiltAt).toBe(rebuiltAt);
    expect(changedLogs(s)).toEqual([]);
    expect(s.db.snapshot('shop-1').server()).toEqual({ baseUrl: s.em.url.replace(/\/+$/, ''), datasetId: 'shop-1' });
  });

  it('a changed base URL (another server, its dataset of the same id at the same version) rebuilds it, and the export is published there as it is', async () => {
    const s = await synced();
    const em2 = await startEmulator();
    others.push(em2);
    em2.emulator.addDataset({ id: 'shop-1', records: copy });
    // The other server's active version is the snapshot's number: only the identity tells them apart.
    expect(em2.emulator.describe('shop-1').active_version).toBe(s.db.snapshot('shop-1').state().activeVersion);
    s.useKey(em2.emulator.addKey({ dataset: 'shop-1', roles: ['read', 'write', 'replace', 'publish'] }));
    s.ds = { ...s.ds, api: { ...s.ds.api, base_url: `${em2.url}/` } };
    await s.engine.sync(s.ds, { file: await s.writeExport(all) });
    expect(em2.emulator.records('shop-1').map(view).sort()).toEqual(all.map(view).sort());
    expect(changedLogs(s)).toHaveLength(1);
    expect(s.db.snapshot('shop-1').server()).toEqual({ baseUrl: em2.url.replace(/\/+$/, ''), datasetId: 'shop-1' });
    // The next sync of the same export finds the new server's snapshot in step: nothing rebuilt again.
    const r = await s.engine.sync(s.ds, { file: await s.writeExport(all) });
    expect(r.result).toBe('unchanged');
    expect(changedLogs(s)).toHaveLength(1);
  });
});
