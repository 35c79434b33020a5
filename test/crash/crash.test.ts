import { spawn } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator, type RunningEmulator } from '../../src/emulator/index.js';
import type { DatasetRecord } from '../../src/model/record.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const rec = (i: number, name = 'Item'): DatasetRecord => ({
  record_id: `r-${String(i).padStart(3, '0')}`, display_name: `${name} ${i}`, api_value: `c-${i}`, aliases: [], attributes: {}, active: true,
});

let em: RunningEmulator;
beforeAll(async () => {
  em = await startEmulator();
});
afterAll(async () => em?.close());

/** A fresh dataset, key, state dir and config for one crash case. */
async function setup(id: string, initial: number, maxPerRecord?: number) {
  const initialRecs = Array.from({ length: initial }, (_, i) => rec(i + 1));
  em.emulator.addDataset({ id, records: initialRecs });
  const key = em.emulator.addKey({ dataset: id, roles: ['read', 'write', 'replace', 'publish'] });
  const dir = await mkdtemp(join(tmpdir(), 'dc-crash-'));
  const policy = maxPerRecord === undefined ? '' : `\n    policy:\n      replace:\n        max_per_record_changes: ${maxPerRecord}\n        job_poll_ms: 100`;
  await writeFile(
    join(dir, 'connector.yaml'),
    `state_dir: ${dir}/state\ndatasets:\n  ${id}:\n    api:\n      base_url: ${em.url}\n      dataset_id: ${id}\n      key: { env: CRASH_KEY }\n` +
      `    source: { type: csv }\n    mapping:\n      fields: { record_id: SKU, display_name: Name, api_value: Code }${policy}\n`,
  );
  return { dir, key, initialRecs };
}

/** Run the built CLI as a child process (async: the emulator answers from this process meanwhile). */
function runCli(dir: string, key: string, id: string, file: string, crashAt?: string): Promise<{ status: number | null; signal: string | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [join(root, 'dist/cli/main.js'), '--config', join(dir, 'connector.yaml'), 'sync', id, '--file', file], {
    env: { ...process.env, CRASH_KEY: key, DATASET_CONNECTOR_CRASH_AT: crashAt ?? '' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (status, signal) => resolve({ status, signal, stdout, stderr })));
}

async function writeExport(dir: string, records: DatasetRecord[]): Promise<string> {
  const file = join(dir, `export-${Math.random().toString(36).slice(2)}.csv`);
  await writeFile(file, ['SKU,Name,Code', ...records.map((r) => `${r.record_id},${r.display_name},${r.api_value}`)].join('\n') + '\n');
  return file;
}

const perRecordSteps = ['plan.begun', 'post.intent', 'post.done', 'patch.intent', 'patch.done', 'delete.intent', 'delete.done', 'verify.done', 'publish.intent', 'publish.done'];
const replaceSteps = ['plan.begun', 'replace.intent', 'replace.done', 'job.intent', 'job.done', 'verify.done', 'publish.intent', 'publish.done'];

describe('crash at each journal step (SIGKILL), then restart', () => {
  for (const [pathName, steps] of [['per_record', perRecordSteps], ['replace', replaceSteps]] as const) {
    for (const step of steps) {
      it(`${pathName}: killed after ${step}`, async () => {
        const id = `crash-${pathName.replace('_', '')}-${step.replace('.', '-')}`;
        const { dir, key, initialRecs } = await setup(id, 10, pathName === 'replace' ? 0 : undefined);
        const first = await writeExport(dir, initialRecs);
        expect((await runCli(dir, key, id, first)).status).toBe(0); // adopt
        const target = [...initialRecs.slice(1).map((r, i) => (i === 0 ? { ...r, display_name: 'Changed' } : r)), rec(11), rec(12)];
        const file = await writeExport(dir, target);
        const before = { ...em.emulator.counters };
        const crashed = await runCli(dir, key, id, file, step);
        expect(crashed.signal).toBe('SIGKILL');
        const again = await runCli(dir, key, id, file);
        expect(again.status, again.stdout + again.stderr).toBe(0);
        const published = em.emulator.records(id);
        expect(published).toEqual([...target].sort((a, b) => (a.record_id < b.record_id ? -1 : 1)));
        const c = em.emulator.counters;
        if (pathName === 'replace') expect(c.jobsCreated - before.jobsCreated).toBe(1);
        else expect(c.recordWrites - before.recordWrites).toBe(4); // 2 adds, 1 change, 1 delete: none applied twice
        // one more run sends nothing
        expect((await runCli(dir, key, id, file)).status).toBe(0);
        expect(em.emulator.counters.recordWrites).toBe(c.recordWrites);
      });
    }
  }
});
