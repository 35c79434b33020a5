import { cp, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.js';
import { cliEngine } from '../../src/cli/engine.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { FeedState, type FeedFile } from '../../src/feeds/state.js';
import { feedView } from '../../src/feeds/view.js';
import { openStateDb } from '../../src/snapshot/db.js';
import type { ExpectStatic } from 'vitest';
import { silentLogger } from '../../src/log/logger.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { runCli } from '../sync/cli-child.js';
import { writeSkuExport } from '../sync/harness.js';

/** The key and dataset of the crash suites (the config reads the key from CRASH_KEY). */
export const KEY = 'tbd_live_crash_test_key_0000000000';
export const DATASET = 'shop';

/** Record r-<i> (three digits). */
export const rec = (i: number, name = 'Item'): DatasetRecord => ({
  record_id: `r-${String(i).padStart(3, '0')}`, display_name: `${name} ${i}`, api_value: `c-${i}`, aliases: [], attributes: {}, active: true,
});

/** The dataset both suites start from, and the next export: r-001 deleted, r-002 changed, r-011 and r-012 added (one of each per-record write). */
export const initial = Array.from({ length: 10 }, (_, i) => rec(i + 1));
export const target = [...initial.slice(1).map((r, i) => (i === 0 ? { ...r, display_name: 'Changed' } : r)), rec(11), rec(12)];

/** An emulator whose dataset holds `records` as its version 1, and the suites' key. */
export async function emulatorWith(records: DatasetRecord[]): Promise<RunningEmulator> {
  const em = await startEmulator();
  em.emulator.addDataset({ id: DATASET, records });
  em.emulator.addKey({ dataset: DATASET, key: KEY, roles: ['read', 'write', 'replace', 'publish'] });
  return em;
}

/** One sync (of a feed: default the dataset's full feed) in this process over the CLI's own wiring (config, key, state db, plan files). */
export async function syncInProcess(configFile: string, file: string, feed?: string) {
  process.env.CRASH_KEY = KEY;
  const cli = await cliEngine(await loadConfig(configFile), silentLogger(), [DATASET]);
  try {
    return await cli.engine.sync(feedView(cli.dataset(DATASET), feed), { file });
  } finally {
    await cli.close();
  }
}

/** The built CLI's sync as a child process, killed after journal step `crashAt` when given; stdout and stderr together for assertion messages. */
export async function runSync(configFile: string, file: string, opts: { feed?: string | null; crashAt?: string } = {}) {
  const args = ['--config', configFile, 'sync', DATASET, '--file', file, ...(opts.feed ? ['--feed', opts.feed] : [])];
  const r = await runCli(args, { CRASH_KEY: KEY, ...(opts.crashAt ? { DATASET_CONNECTOR_CRASH_AT: opts.crashAt } : {}) });
  return { ...r, output: r.stdout + r.stderr };
}

/** A counting semaphore: at most `n` cases hold a slot (children are CPU-bound at start, the emulators answer meanwhile). */
export function slots(n: number): <T>(fn: () => Promise<T>) => Promise<T> {
  let free = n;
  const waiting: Array<() => void> = [];
  return async (fn) => {
    if (free > 0) free--;
    else await new Promise<void>((r) => waiting.push(r));
    try {
      return await fn();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else free++;
    }
  };
}

/** The journal steps of the replace path, each a crash point (run-journal.ts). */
export const REPLACE_STEPS = ['plan.begun', 'replace.intent', 'replace.done', 'job.intent', 'job.done', 'verify.intent', 'verify.done', 'publish.intent', 'publish.done'];

/** A state folder after the adopting first run of `initial` (every record owned, nothing sent), for cases to copy; `yaml` writes the config for an emulator and a state folder. */
export async function adoptedTemplate(yaml: (url: string, stateDir: string) => string): Promise<string> {
  const em = await emulatorWith(initial);
  try {
    const dir = await mkdtemp(join(tmpdir(), 'dc-crash-tpl-'));
    const stateDir = join(dir, 'state');
    const config = join(dir, 'connector.yaml');
    await writeFile(config, yaml(em.url, stateDir));
    const first = await syncInProcess(config, await writeSkuExport(dir, 'export-0.csv', initial));
    if (first.result !== 'unchanged' || first.owned !== 10) throw new Error(`template run: ${JSON.stringify(first)}`);
    return stateDir;
  } finally {
    await em.close();
  }
}

/** One case's folder: a copy of the template state and its config for this emulator. */
export async function caseFolder(template: string, yaml: (url: string, stateDir: string) => string, url: string): Promise<{ dir: string; stateDir: string; config: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'dc-crash-'));
  const stateDir = join(dir, 'state');
  await cp(template, stateDir, { recursive: true });
  const config = join(dir, 'connector.yaml');
  await writeFile(config, yaml(url, stateDir));
  return { dir, stateDir, config };
}

/**
 * After the restart: no plan left open or on disk, and the snapshot at the server's active version. Returns the
 * state database's feed state's last files (issue 13) for the caller's own checks.
 */
export async function expectSettled(expect: ExpectStatic, stateDir: string, em: RunningEmulator): Promise<FeedFile[]> {
  const db = openStateDb(join(stateDir, 'state.db'));
  try {
    expect(db.journal.openPlan(DATASET)).toBeNull();
    expect(db.snapshot(DATASET).info().activeVersion).toBe(em.emulator.describe(DATASET).active_version);
    // No plan's files; the dataset's kept rows (issue 18, on by default) are no plan's and stay for the next read.
    expect((await readdir(join(stateDir, 'state.db.plans')).catch(() => [])).filter((n) => n !== `unchanged-rows.${DATASET}`)).toEqual([]);
    return new FeedState(db.conn, DATASET).files();
  } finally {
    db.close();
  }
}
