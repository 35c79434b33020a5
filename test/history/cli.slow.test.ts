import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { silentLogger } from '../../src/log/logger.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { openStateDb } from '../../src/snapshot/db.js';
import { cliEngine } from '../../src/cli/engine.js';
import { runCli, runCliTty } from '../sync/cli-child.js';

/**
 * Issue 14 through the built CLI in child processes: why, plan --restore,
 * restore (exit codes as sync), pause/status/resume, and SIGKILL at each
 * journal step of a restore, then the restore run again finishing it once.
 */

const KEY = 'tbd_live_history_cli_test_key_00000';
const DS = 'shop';
const env = { HIST_KEY: KEY };

const item = (i: number, stock = i): DatasetRecord => ({
  record_id: `i-${String(i).padStart(3, '0')}`, display_name: `Item ${i}`, api_value: `c-${i}`, aliases: [], attributes: { stock }, active: true,
});
const initial = Array.from({ length: 10 }, (_, i) => item(i + 1));
/** The bad export: i-001 gone, i-002 at 0, i-011 new (one of each per-record write). */
const bad = [...initial.slice(1).map((r) => (r.record_id === 'i-002' ? item(2, 0) : r)), item(11)];
const byId = (a: DatasetRecord, b: DatasetRecord) => (a.record_id < b.record_id ? -1 : 1);

async function setup(): Promise<{ em: RunningEmulator; dir: string; config: string; v0: number; stateDir: string }> {
  const em = await startEmulator();
  em.emulator.addDataset({ id: DS, records: initial });
  em.emulator.addKey({ dataset: DS, key: KEY, roles: ['read', 'write', 'replace', 'publish'] });
  const dir = await mkdtemp(join(tmpdir(), 'dc-hist-cli-'));
  const stateDir = join(dir, 'state');
  const config = join(dir, 'connector.yaml');
  await writeFile(
    config,
    `state_dir: ${stateDir}\ndatasets:\n  ${DS}:\n    api:\n      base_url: ${em.url}\n      dataset_id: ${DS}\n      key: { env: HIST_KEY }\n` +
      `    source: { type: csv }\n    mapping:\n      fields:\n        record_id: SKU\n        display_name: Name\n        api_value: Code\n        attributes.stock: { column: Stock, transforms: [integer] }\n` +
      `    policy:\n      guards:\n        values: []\n`,
  );
  expect((await syncHere(config, await exportOf(dir, 'first.csv', initial))).result).toBe('unchanged'); // adopted
  const v0 = em.emulator.describe(DS).active_version;
  expect((await syncHere(config, await exportOf(dir, 'bad.csv', bad))).result).toBe('published');
  return { em, dir, config, v0, stateDir };
}

async function exportOf(dir: string, name: string, list: DatasetRecord[]): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, ['SKU,Name,Code,Stock', ...list.map((r) => `${r.record_id},${r.display_name},${r.api_value},${r.attributes.stock}`)].join('\n') + '\n');
  return file;
}

async function syncHere(config: string, file: string) {
  process.env.HIST_KEY = KEY;
  const cli = await cliEngine(await loadConfig(config), silentLogger(), [DS]);
  try {
    return await cli.engine.sync(cli.dataset(DS), { file });
  } finally {
    await cli.close();
  }
}

const cli = (config: string, args: string[], extra: Record<string, string> = {}) => runCli(['--config', config, ...args], { ...env, ...extra });

describe('why, plan --restore, restore, pause and resume (CLI)', () => {
  it('answers, plans, restores, pauses and resumes as a person runs them', async () => {
    const { em, dir, config, v0 } = await setup();
    try {
      const w = await cli(config, ['why', DS, 'i-001', '--json']);
      expect(w.status, w.stderr).toBe(0);
      expect(JSON.parse(w.stdout)).toMatchObject({ status: 'deleted', deleted: { file: join(dir, 'bad.csv'), deleteRatio: 0.1 } });
      const unknown = await cli(config, ['why', DS, 'zzz']);
      expect(unknown.status).toBe(1);
      expect(unknown.stderr).toContain('RECORD_UNKNOWN');

      const before = { ...em.emulator.counters };
      const plan = await cli(config, ['plan', DS, '--restore', '--to-version', String(v0), '--json']);
      expect(plan.status, plan.stderr).toBe(0);
      expect(JSON.parse(plan.stdout).plan.counts).toMatchObject({ adds: 1, changes: 1, deletes: 1 });
      expect(em.emulator.counters.recordWrites).toBe(before.recordWrites);
      expect((await cli(config, ['restore', DS, '--to-version', 'x'])).status).toBe(2);
      const tooNew = await cli(config, ['restore', DS, '--to-version', '999999']);
      expect(tooNew.status).toBe(2);
      expect(tooNew.stderr).toMatch(/VERSION_TOO_NEW.*version 999999 is newer than the newest version kept, version \d+/);
      expect((await cli(config, ['plan', DS, '--restore', '--to-version', '999999'])).status).toBe(2);
      // plan without --file (nor --restore): a usage error that says what to give (was a path TypeError).
      const noFile = await cli(config, ['plan', DS]);
      expect(noFile.status).toBe(2);
      expect(noFile.stderr).toContain('give --file <export>');
      expect(noFile.stderr).not.toContain('argument must be of type string');
      const tooOld = await cli(config, ['restore', DS, '--to-time', '2000-01-01T00:00:00Z']);
      expect(tooOld.status).toBe(1);
      expect(tooOld.stderr).toMatch(/HISTORY_TOO_OLD.*oldest version kept is/);

      const r = await cli(config, ['restore', DS, '--to-version', String(v0), '--pause', '--json']);
      expect(r.status, r.stderr).toBe(0);
      const summary = JSON.parse(r.stdout.trim().split('\n').at(-1)!);
      expect(summary).toMatchObject({ event: 'restore.summary', result: 'published', paused: true });
      expect(summary.warnings.at(-1)).toContain('is paused');
      expect(em.emulator.records(DS)).toEqual([...initial].sort(byId));

      const st = await cli(config, ['status', '--json']);
      expect(JSON.parse(st.stdout).datasets[0].paused).toMatchObject({ by: 'restore --pause' });
      const res = await cli(config, ['resume', DS]);
      expect(JSON.parse(res.stdout)).toEqual({ dataset: DS, paused: false, wasPaused: true });
      expect(JSON.parse((await cli(config, ['status', '--json'])).stdout).datasets[0].paused).toBeNull();
      const p = await cli(config, ['pause', DS]);
      expect(p.status).toBe(0);
      expect((await runCliTty(['--config', config, 'status'], env)).stdout).toContain('PAUSED since');
      const whyTty = await runCliTty(['--config', config, 'why', DS, 'i-002'], env);
      expect(whyTty.stdout).toMatch(/attributes\.stock = 2: version \d+ at .*, restore /);
      expect(whyTty.stdout).toContain(`was 0: version`);
    } finally {
      await em.close();
    }
  }, 120_000);
});

const STEPS = ['plan.begun', 'post.intent', 'post.done', 'patch.intent', 'patch.done', 'delete.intent', 'delete.done', 'verify.intent', 'verify.done', 'publish.intent', 'publish.done'];

describe('restore killed (SIGKILL) at each journal step, then run again', () => {
  for (const step of STEPS) {
    it.concurrent(`killed after ${step}`, async ({ expect }) => {
      const { em, config, v0, stateDir } = await setup();
      try {
        const base = { ...em.emulator.counters };
        const crashed = await cli(config, ['restore', DS, '--to-version', String(v0)], { DATASET_CONNECTOR_CRASH_AT: step });
        expect(crashed.signal, crashed.stdout + crashed.stderr).toBe('SIGKILL');
        const again = await cli(config, ['restore', DS, '--to-version', String(v0)]);
        expect(again.status, again.stdout + again.stderr).toBe(0);
        // The run that finished the resumed plan reports its counts (one add, one change, one delete), not 0;
        // after publish.done (marked in the commit that ends the plan) the killed run had finished it: nothing left.
        const summary = JSON.parse(again.stdout.trim().split('\n').at(-1)!);
        const left = step === 'publish.done' ? { result: 'unchanged', adds: 0, changes: 0, deletes: 0 } : { result: 'published', adds: 1, changes: 1, deletes: 1 };
        expect(summary).toMatchObject({ event: 'restore.summary', ...left });
        expect(em.emulator.records(DS)).toEqual([...initial].sort(byId));
        const c = em.emulator.counters;
        expect(c.recordWrites - base.recordWrites).toBe(3); // one add, one change, one delete: none twice
        expect(c.publishes - base.publishes).toBe(1);
        const db = openStateDb(join(stateDir, 'state.db'));
        try {
          expect(db.journal.openPlan(DS)).toBeNull();
          const restores = db.conn.prepare("SELECT count(*) FROM history_versions WHERE dataset = ? AND kind = 'restore'").pluck().get(DS);
          expect(restores).toBeGreaterThanOrEqual(1);
        } finally {
          db.close();
        }
        // No plan's files; the rows the template's syncs kept for the next read (issue 18, on by default) are no plan's.
        expect((await readdir(join(stateDir, 'state.db.plans')).catch(() => [])).filter((n) => n !== `unchanged-rows.${DS}`)).toEqual([]);
      } finally {
        await em.close();
      }
    }, 120_000);
  }
});
