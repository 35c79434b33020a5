import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { silentLogger } from '../../src/log/logger.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { cliEngine } from '../../src/cli/engine.js';
import { runCli } from '../sync/cli-child.js';
import { recs, writeSkuExport } from '../sync/harness.js';

/**
 * What approve and discard say when there is nothing to publish or discard,
 * or when it cannot be done (issue 11, point 9): the words fit the case, a
 * failure goes to stderr with what to do, and the exit code is the README's
 * (0 done, 1 not published, 3 held for a person). The built CLI as a child.
 */

const KEY = 'tbd_live_held_messages_full_00001';
const NO_PUBLISH = 'tbd_live_held_messages_nopub_0002';
const env = { HM_KEY: KEY, HM_NOPUB_KEY: NO_PUBLISH };
let em: RunningEmulator;
let dir: string;
let config: string;

const writeExport = (name: string, records: DatasetRecord[]) => writeSkuExport(dir, name, records);

/** A sync in this process over the CLI's wiring. */
async function syncHere(dataset: string, file: string) {
  Object.assign(process.env, env);
  const cli = await cliEngine(await loadConfig(config), silentLogger(), [dataset]);
  try {
    return await cli.engine.sync(cli.dataset(dataset), { file });
  } finally {
    await cli.close();
  }
}

const cli = (...args: string[]) => runCli(['--config', config, ...args], env);

beforeAll(async () => {
  em = await startEmulator();
  for (const id of ['shop-1', 'shop-2']) em.emulator.addDataset({ id, records: recs(10) });
  em.emulator.addKey({ dataset: 'shop-1', key: KEY, roles: ['read', 'write', 'replace', 'publish'] });
  em.emulator.addKey({ dataset: 'shop-2', key: NO_PUBLISH, roles: ['read', 'write', 'replace'] });
  dir = await mkdtemp(join(tmpdir(), 'dc-held-msg-'));
  config = join(dir, 'connector.yaml');
  const ds = (key: string) =>
    `    api:\n      base_url: ${em.url}\n      key: { env: ${key} }\n    source: { type: csv }\n    mapping:\n      fields: { record_id: SKU, display_name: Name, api_value: Code }\n`;
  await writeFile(config, `state_dir: ${join(dir, 'state')}\ndatasets:\n  shop-1:\n${ds('HM_KEY')}  shop-2:\n${ds('HM_NOPUB_KEY')}`);
  const all = await writeExport('all.csv', recs(10));
  expect((await syncHere('shop-1', all)).result).toBe('unchanged'); // adopt the ten
  expect((await syncHere('shop-2', all)).result).toBe('unchanged');
});
afterAll(async () => {
  for (const k of Object.keys(env)) delete process.env[k];
  await em?.close();
});

describe('approve and discard: messages and exit codes', () => {
  it('nothing held: discard has nothing to do (0, stdout); approve published nothing (1, stderr, and where to look)', async () => {
    const d = await cli('discard', 'shop-1');
    expect(d.status, d.stderr).toBe(0);
    // Piped: the result as one JSON object on stdout (a terminal gets held-report's line); what to do on stderr.
    expect(JSON.parse(d.stdout)).toEqual({ dataset: 'shop-1', action: 'nothing_held', code: 'NOTHING_HELD', held: null, version: null });
    expect(d.stderr).toBe('');
    const a = await cli('approve', 'shop-1');
    expect(a.status).toBe(1);
    expect(JSON.parse(a.stdout)).toMatchObject({ dataset: 'shop-1', action: 'nothing_held', code: 'NOTHING_HELD' });
    expect(a.stderr).toBe('nothing held (dataset shop-1): there is no held change to approve; nothing was published\n  dataset-connector status shows what each dataset holds\n');
    expect(a.stderr + d.stdout).not.toContain('rejected');
  });

  it('approve of a draft that expired: 1, on stderr, saying nothing was published and how the change comes back', async () => {
    // A held change is staged only through a key that has shown it stages (issue 11, point 2): one ordinary change first.
    const renamed = recs(10).map((r, i) => (i === 0 ? { ...r, display_name: 'Renamed' } : r));
    expect((await syncHere('shop-1', await writeExport('renamed.csv', renamed))).result).toBe('published');
    expect((await syncHere('shop-1', await writeExport('fewer.csv', recs(7)))).result).toBe('held');
    expect(em.emulator.describe('shop-1').draft_version).not.toBeNull();
    const v = em.emulator.describe('shop-1').draft_version!;
    em.emulator.clock.advance(25 * 3_600_000); // past the 24-hour draft lifetime
    const a = await cli('approve', 'shop-1');
    expect(a.status).toBe(1);
    expect(JSON.parse(a.stdout)).toMatchObject({ dataset: 'shop-1', action: 'expired', code: 'DRAFT_EXPIRED', version: v });
    expect(a.stderr).toBe(
      `expired [DRAFT_EXPIRED] (dataset shop-1) (version ${v}): draft ${v} is expired on the server: nothing was published, and the held change is dropped\n` +
        '  the next export of shop-1 syncs the change again; to do it now: dataset-connector sync shop-1 --file <export>\n',
    );
    expect(em.emulator.records('shop-1')).toHaveLength(10);
    const st = await cli('status', '--json');
    expect(JSON.parse(st.stdout).datasets.find((x: { dataset: string }) => x.dataset === 'shop-1')).toMatchObject({ held: null });
  });

  it('approve with a key that cannot publish: still held for a person (3), on stderr, saying to publish in the portal', async () => {
    expect((await syncHere('shop-2', await writeExport('fewer-2.csv', recs(7)))).result).toBe('held');
    // Kept unsent until approved: the key has not shown yet that it stages (issue 11, point 2).
    expect(em.emulator.describe('shop-2').draft_version).toBeNull();
    const a = await cli('approve', 'shop-2');
    const v = em.emulator.describe('shop-2').draft_version!;
    expect(v).not.toBeNull();
    expect(a.status).toBe(3);
    expect(JSON.parse(a.stdout)).toMatchObject({ dataset: 'shop-2', action: 'staged', code: 'HELD_PUBLISH_REQUIRED', version: v });
    expect(a.stderr).toContain(`staged [HELD_PUBLISH_REQUIRED] (dataset shop-2) (version ${v}): the key has no publish role`);
    expect(a.stderr).toContain(`  publish draft ${v} in the portal, or reissue the key with the publish role and run dataset-connector approve shop-2 again`);
    expect(em.emulator.describe('shop-2').draft_version).toBe(v);
    // Discarding needs the publish role too: held for a person still, and said where it can be done.
    const d = await cli('discard', 'shop-2');
    expect(d.status, d.stdout + d.stderr).toBe(3);
    expect(d.stderr).toContain('error [PUBLISH_REQUIRED] (dataset shop-2)');
    expect(d.stderr).toContain('  the key has no publish role: publish or discard the draft in the portal, or reissue the key with the publish role and run the command again\n');
    expect(em.emulator.describe('shop-2').draft_version).toBe(v);
  });

  it("a draft someone else made: approve and discard leave it to the portal, held for a person (3), saying so", async () => {
    em.emulator.portalDraft('shop-1', { upsert: [{ ...recs(1)[0]!, display_name: 'Seasonal' }] });
    expect((await syncHere('shop-1', await writeExport('more.csv', recs(11)))).result).toBe('waiting');
    const v = em.emulator.describe('shop-1').draft_version!;
    for (const action of ['approve', 'discard'] as const) {
      const r = await cli(action, 'shop-1');
      expect(r.status, r.stderr).toBe(3);
      expect(JSON.parse(r.stdout)).toMatchObject({ dataset: 'shop-1', action: 'nothing_held', held: 'foreign_draft', version: v });
      expect(r.stderr).toContain(`held [DRAFT_PENDING] (dataset shop-1): draft ${v} on the server holds changes the connector did not make`);
      expect(r.stderr).toContain(`nothing was ${action === 'approve' ? 'published' : 'discarded'}`);
      expect(r.stderr).toContain(`  publish or discard draft ${v} in the portal`);
    }
    expect(em.emulator.describe('shop-1').draft_version).toBe(v); // left alone
  });
});
