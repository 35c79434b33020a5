import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, it } from 'vitest';
import type { DatasetRecord } from '../../src/model/record.js';
import { writeSkuExport } from '../sync/harness.js';
import { adoptedTemplate, caseFolder, DATASET, expectSettled, emulatorWith, initial, REPLACE_STEPS, runSync, slots, syncInProcess, target } from './helpers.js';

/**
 * Issue 13: SIGKILL the built CLI right after each journal step of a MERGED
 * replace (a dataset of a catalogue feed and a stock feed), restart it, and
 * check the published records are the merged state exactly (the catalogue's
 * records with the stock feed's values), no job or publish doubled, and the
 * feed state in the database consistent: a following sync of either feed
 * sends nothing. Also a crash between the catalogue's run and the stock's
 * (the catalogue killed at each step, the stock feed's file next).
 * Built like crash.test.ts: one adopting template state, concurrent cases.
 */

const PARALLEL = 4;

const ids = (rs: DatasetRecord[]) => rs.map((r) => r.record_id);
/** Stock files: S1 of the first ten records, S2 of the catalogue's next twelve (r-001 no longer listed). */
const S1 = Object.fromEntries(ids(initial).map((id, i) => [id, i + 1]));
const S2 = Object.fromEntries(ids(target).map((id, i) => [id, i + 3]));
/** A stock file of two of the ten records: merged by index (listed-share.ts), its replace streams the others from the snapshot. */
const S3 = { 'r-002': 70, 'r-009': 40 };

/** The records of a catalogue with the stock of `stock` where it names them: the merged state. */
const merged = (catalogue: DatasetRecord[], stock: Record<string, number>) =>
  catalogue.map((r) => (stock[r.record_id] === undefined ? r : { ...r, attributes: { stock: stock[r.record_id]! } })).sort((a, b) => (a.record_id < b.record_id ? -1 : 1));

/** Every change goes by replace (the merged records whole), as a big change would by cost. */
function configYaml(url: string, stateDir: string): string {
  return `state_dir: ${stateDir}
datasets:
  ${DATASET}:
    api: { base_url: ${url}, dataset_id: ${DATASET}, key: { env: CRASH_KEY } }
    feeds:
      main:
        role: full
        source: { type: csv }
        mapping: { fields: { record_id: SKU, display_name: Name, api_value: Code } }
      stock:
        role: update
        source: { type: csv }
        mapping: { fields: { record_id: SKU, attributes.stock: { column: Qty, transforms: [integer] } } }
    policy:
      replace: { max_per_record_changes: 0, prefer_import: false, job_poll_ms: 100 }
`;
}

async function writeStock(dir: string, stock: Record<string, number>, name: string): Promise<string> {
  const file = join(dir, name);
  await writeFile(file, ['SKU,Qty', ...Object.entries(stock).map(([id, q]) => `${id},${q}`)].join('\n') + '\n');
  return file;
}

const emulatorWithInitial = () => emulatorWith(initial);
const inSlot = slots(PARALLEL);

let templateState: string;
beforeAll(async () => {
  templateState = await adoptedTemplate(configYaml);
});
afterAll(() => {
  delete process.env.CRASH_KEY;
});

/**
 * The cases. `before`: syncs in this process first (a stock file already published);
 * `crash`: the run killed; `next`: the run after the restart; `expected`: the published state.
 */
interface Case {
  name: string;
  before: Array<{ stock: Record<string, number> } | { catalogue: DatasetRecord[] }>;
  crash: { stock: Record<string, number> } | { catalogue: DatasetRecord[] };
  /** Absent: the same file again. */
  next?: { stock: Record<string, number> } | { catalogue: DatasetRecord[] };
  expected: DatasetRecord[];
  /** Jobs and publishes of the crashed run and the restart together. */
  jobs: number;
}

const cases: Case[] = [
  // The stock feed's file merged into the catalogue's records, sent whole.
  { name: 'stock feed replace', before: [], crash: { stock: S1 }, expected: merged(initial, S1), jobs: 1 },
  // The catalogue's next export carrying the stock feed's values (never the catalogue alone).
  { name: 'catalogue replace with the stock overlaid', before: [{ stock: S1 }], crash: { catalogue: target }, expected: merged(target, S1), jobs: 1 },
  // A crash between the catalogue's run and the stock's: the restart runs the stock feed's file.
  // Merged and diffed by index: the replace body is the snapshot (S1's stock) with S3's records in their place.
  { name: 'stock feed listing a few (indexed) replace', before: [{ stock: S1 }], crash: { stock: S3 }, expected: merged(initial, { ...S1, ...S3 }), jobs: 1 },
  { name: 'catalogue, then the stock feed after the restart', before: [{ stock: S1 }], crash: { catalogue: target }, next: { stock: S2 }, expected: merged(target, S2), jobs: 2 },
];

describe('issue 13: crash at each journal step (SIGKILL) of a merged replace, then restart', () => {
  for (const c of cases) {
    for (const step of REPLACE_STEPS) {
      it.concurrent(`${c.name}: killed after ${step}`, ({ expect }) =>
        inSlot(async () => {
          const em = await emulatorWithInitial();
          try {
            const { dir, stateDir, config } = await caseFolder(templateState, configYaml, em.url);
            let n = 0;
            const fileOf = async (f: Case['crash']) =>
              'stock' in f ? { file: await writeStock(dir, f.stock, `stock-${++n}.csv`), feed: 'stock' } : { file: await writeSkuExport(dir, `catalogue-${++n}.csv`, f.catalogue), feed: null };
            for (const b of c.before) {
              const { file, feed } = await fileOf(b);
              expect((await syncInProcess(config, file, feed ?? undefined)).result).toBe('published');
            }
            const c0 = { ...em.emulator.counters };

            const crash = await fileOf(c.crash);
            const crashed = await runSync(config, crash.file, { feed: crash.feed, crashAt: step });
            expect(crashed.signal, crashed.output).toBe('SIGKILL');
            const next = c.next ? await fileOf(c.next) : crash;
            const last = c.next ?? c.crash;
            const again = await runSync(config, next.file, { feed: next.feed });
            expect(again.status, again.output).toBe(0);

            expect(em.emulator.records(DATASET)).toEqual(c.expected);
            const c1 = { ...em.emulator.counters };
            expect(c1.jobsCreated - c0.jobsCreated).toBe(c.jobs);
            expect(c1.publishes - c0.publishes).toBe(c.jobs);
            expect(c1.recordWrites).toBe(c0.recordWrites);

            const resumed = await expectSettled(expect, stateDir, em);
            expect(resumed.find((f) => f.feed === 'stock')?.file).toBe('stock' in last ? next.file : join(dir, 'stock-1.csv'));

            // The feed state is the published one: either feed's last file again sends nothing (and, changing
            // nothing, still becomes its feed's last file: feed state records an unchanged file too).
            const lastCatalogue = 'catalogue' in last ? last.catalogue : 'catalogue' in c.crash ? c.crash.catalogue : initial;
            const lastStock = 'stock' in last ? last.stock : S1;
            for (const [f, feed] of [
              [await writeSkuExport(dir, 'catalogue-again.csv', lastCatalogue), undefined],
              [await writeStock(dir, lastStock, 'stock-again.csv'), 'stock'],
            ] as const) {
              const s = await syncInProcess(config, f, feed);
              expect(s.result, JSON.stringify(s)).toBe('unchanged');
            }
            expect(em.emulator.counters).toEqual(c1);
            expect(em.emulator.records(DATASET)).toEqual(c.expected);
            const files = await expectSettled(expect, stateDir, em);
            expect(files.find((f) => f.feed === 'stock')?.file).toBe(join(dir, 'stock-again.csv'));
          } finally {
            await em.close();
          }
        }),
      120_000,
      );
    }
  }
});
