import { afterAll, beforeAll, describe, it } from 'vitest';
import type { DatasetRecord } from '../../src/model/record.js';
import { writeSkuExport } from '../sync/harness.js';
import { adoptedTemplate, caseFolder, DATASET, expectSettled, emulatorWith, initial, REPLACE_STEPS, runSync, slots, syncInProcess, target } from './helpers.js';

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

/** Cases in flight at once: children are CPU-bound at start, the emulators answer meanwhile. */
const PARALLEL = 4;

const perRecordSteps = ['plan.begun', 'post.intent', 'post.done', 'patch.intent', 'patch.done', 'delete.intent', 'delete.done', 'verify.intent', 'verify.done', 'publish.intent', 'publish.done'];
const replaceSteps = REPLACE_STEPS;
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

const writeExport = (dir: string, records: DatasetRecord[]) => writeSkuExport(dir, 'export.csv', records);
const emulatorWithInitial = () => emulatorWith(initial);

const inSlot = slots(PARALLEL);

let templateState: string;
beforeAll(async () => {
  templateState = await adoptedTemplate((url, stateDir) => configYaml(url, stateDir, ''));
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
            const { dir, stateDir, config } = await caseFolder(templateState, (url, stateDir) => configYaml(url, stateDir, POLICY[pathName]), em.url);
            const file = await writeExport(dir, target);

            const crashed = await runSync(config, file, { crashAt: step });
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
            await expectSettled(expect, stateDir, em);
          } finally {
            await em.close();
          }
        }),
      120_000,
      );
    }
  }
});
