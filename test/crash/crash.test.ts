import { cp, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import { silentLogger } from '../../src/log/logger.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { openStateDb } from '../../src/snapshot/db.js';
import { cliEngine } from '../../src/cli/engine.js';
import { runCli } from '../sync/cli-child.js';

/**
 * SIGKILL the built CLI right after each journal step of each path (per-record,
 * replace, and the upload's own steps), restart it, and check the published
 * records equal the source with no duplicate job or write. Kept fast (issue 4's crash test runs in every CI build):
 * - the adopting first run is done once, into a template state dir that
 *   every case copies (its emulator seeds the same version 1);
 * - per case only the crashing child and the restarted child are real starts;
 *   the "a further sync sends nothing" check runs in-process on the same state;
 * - cases run concurrently, each with its own emulator, state dir and files.
 */

const KEY = 'tbd_live_crash_test_key_0000000000';
const DATASET = 'shop';
/** Cases in flight at once: children are CPU-bound at start, the emulators answer meanwhile. */
const PARALLEL = 4;

const rec = (i: number, name = 'Item'): DatasetRecord => ({
  record_id: `r-${String(i).padStart(3, '0')}`, display_name: `${name} ${i}`, api_value: `c-${i}`, aliases: [], attributes: {}, active: true,
});
const initial = Array.from({ length: 10 }, (_, i) => rec(i + 1));
/** r-001 deleted, r-002 changed, r-011 and r-012 added: one of each per-record write. */
const target = [...initial.slice(1).map((r, i) => (i === 0 ? { ...r, display_name: 'Changed' } : r)), rec(11), rec(12)];

const perRecordSteps = ['plan.begun', 'post.intent', 'post.done', 'patch.intent', 'patch.done', 'delete.intent', 'delete.done', 'verify.intent', 'verify.done', 'publish.intent', 'publish.done'];
const replaceSteps = ['plan.begun', 'replace.intent', 'replace.done', 'job.intent', 'job.done', 'verify.intent', 'verify.done', 'publish.intent', 'publish.done'];
/** The upload path shares the job, verify and publish steps with replace (apply-replace.ts); its own steps are these. */
const importSteps = ['plan.begun', 'import.intent', 'import.done', 'job.done'];
const POLICY: Record<'per_record' | 'replace' | 'import', string> = {
  per_record: '',
  replace: '\n    policy:\n      replace:\n        max_per_record_changes: 0\n        prefer_import: false\n        job_poll_ms: 100',
  import: '\n    policy:\n      replace:\n        max_per_record_changes: 0\n        job_poll_ms: 100',
};

function configYaml(url: string, stateDir: string, policy: string): string {
  return (
    `state_dir: ${stateDir}\ndatasets:\n  ${DATASET}:\n    api:\n      base_url: ${url}\n      dataset_id: ${DATASET}\n      key: { env: CRASH_KEY }\n` +
    `    source: { type: csv }\n    mapping:\n      fields: { record_id: SKU, display_name: Name, api_value: Code }${policy}\n`
  );
}

async function writeExport(dir: string, records: DatasetRecord[]): Promise<string> {
  const file = join(dir, 'export.csv');
  await writeFile(file, ['SKU,Name,Code', ...records.map((r) => `${r.record_id},${r.display_name},${r.api_value}`)].join('\n') + '\n');
  return file;
}

async function emulatorWithInitial(): Promise<RunningEmulator> {
  const em = await startEmulator();
  em.emulator.addDataset({ id: DATASET, records: initial });
  em.emulator.addKey({ dataset: DATASET, key: KEY, roles: ['read', 'write', 'replace', 'publish'] });
  return em;
}

/** One sync in this process over the CLI's own wiring (config, key, state db, plan files). */
async function syncInProcess(configFile: string, file: string) {
  process.env.CRASH_KEY = KEY;
  const config = await loadConfig(configFile);
  const cli = await cliEngine(config, silentLogger(), [DATASET]);
  try {
    return await cli.engine.sync(cli.dataset(DATASET), { file });
  } finally {
    await cli.close();
  }
}

/** The built CLI's sync as a child process; stdout and stderr together for assertion messages. */
async function runSync(configFile: string, file: string, crashAt?: string) {
  const r = await runCli(['--config', configFile, 'sync', DATASET, '--file', file], { CRASH_KEY: KEY, ...(crashAt ? { DATASET_CONNECTOR_CRASH_AT: crashAt } : {}) });
  return { ...r, output: r.stdout + r.stderr };
}

/** A counting semaphore: at most `n` cases hold a slot. */
function slots(n: number): <T>(fn: () => Promise<T>) => Promise<T> {
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
const inSlot = slots(PARALLEL);

let templateState: string;
beforeAll(async () => {
  // The adopting first run: every initial record becomes owned (so r-001 may be deleted), nothing is sent.
  const em = await emulatorWithInitial();
  try {
    const dir = await mkdtemp(join(tmpdir(), 'dc-crash-tpl-'));
    templateState = join(dir, 'state');
    const config = join(dir, 'connector.yaml');
    await writeFile(config, configYaml(em.url, templateState, ''));
    const first = await syncInProcess(config, await writeExport(dir, initial));
    if (first.result !== 'unchanged' || first.owned !== 10) throw new Error(`template run: ${JSON.stringify(first)}`);
  } finally {
    await em.close();
  }
});
afterAll(() => {
  delete process.env.CRASH_KEY;
});

describe('crash at each journal step (SIGKILL), then restart', () => {
  for (const [pathName, steps] of [['per_record', perRecordSteps], ['replace', replaceSteps], ['import', importSteps]] as const) {
    for (const step of steps) {
      it.concurrent(`${pathName}: killed after ${step}`, ({ expect }) =>
        inSlot(async () => {
          const em = await emulatorWithInitial();
          try {
            const dir = await mkdtemp(join(tmpdir(), 'dc-crash-'));
            const stateDir = join(dir, 'state');
            await cp(templateState, stateDir, { recursive: true });
            const config = join(dir, 'connector.yaml');
            await writeFile(config, configYaml(em.url, stateDir, POLICY[pathName]));
            const file = await writeExport(dir, target);

            const crashed = await runSync(config, file, step);
            expect(crashed.signal, crashed.output).toBe('SIGKILL');
            const again = await runSync(config, file);
            expect(again.status, again.output).toBe(0);

            expect(em.emulator.records(DATASET)).toEqual([...target].sort((a, b) => (a.record_id < b.record_id ? -1 : 1)));
            const c = { ...em.emulator.counters };
            if (pathName === 'per_record') expect(c.recordWrites).toBe(4); // 2 adds, 1 change, 1 delete: none applied twice
            else expect(c.jobsCreated).toBe(1);
            const sent = new Set(em.emulator.requests.filter((r) => r.method === 'PUT' || r.path.endsWith('/imports')).map((r) => r.method));
            expect([...sent]).toEqual(pathName === 'replace' ? ['PUT'] : pathName === 'import' ? ['POST'] : []);
            expect(c.publishes).toBe(1);

            // A further sync of the same export sends nothing and finds no leftover plan.
            const third = await syncInProcess(config, file);
            expect(third.result, JSON.stringify(third)).toBe('unchanged');
            expect(em.emulator.counters).toEqual(c);
            const db = openStateDb(join(stateDir, 'state.db'));
            try {
              expect(db.journal.openPlan(DATASET)).toBeNull();
              expect(db.snapshot(DATASET).info().activeVersion).toBe(em.emulator.describe(DATASET).active_version);
            } finally {
              db.close();
            }
            expect(await readdir(join(stateDir, 'state.db.plans')).catch(() => [])).toEqual([]);
          } finally {
            await em.close();
          }
        }),
      120_000,
      );
    }
  }
});
