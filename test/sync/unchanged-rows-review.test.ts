import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { planDir } from '../../src/sync/executor/plan-files.js';
import { KEPT_FILE, NEXT_FILE } from '../../src/sync/unchanged/kept-rows.js';
import { keptDirOf } from '../../src/sync/unchanged/sync-kept.js';
import { handMadeXlsx } from '../sources/xlsx-parts.js';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { policySchema } from '../../src/config/policy.js';
import { sourceConfigSchema } from '../../src/sources/config.js';
import { mappingConfigSchema } from '../../src/mapping/config.js';
import type { DatasetRecord } from '../../src/model/record.js';
import { recs, scenario, type Scenario } from './harness.js';

/**
 * Review rv18 of issue 18 (policy unchanged_rows): each case runs the same steps twice, with the policy on and
 * off, on fresh emulators, and the dataset published (and each sync's counts) must be the same: a read that
 * takes rows as unchanged must never publish anything the full read would not, nor miss anything it would.
 */

const open: Scenario[] = [];
afterEach(async () => {
  for (const s of open.splice(0)) await s.close();
});

type Step = (s: Scenario) => Promise<unknown>;

const lines = (rows: Array<Pick<DatasetRecord, 'record_id' | 'display_name' | 'api_value'>>) => rows.map((r) => `${r.record_id},${r.display_name},${r.api_value}`);

async function writeLines(s: Scenario, name: string, body: string[]): Promise<string> {
  const file = join(s.dir, name);
  await writeFile(file, ['SKU,Name,Code', ...body].join('\n') + '\n');
  return file;
}

function setPolicy(s: Scenario, policy: Record<string, unknown>): void {
  s.ds = { ...s.ds, policy: policySchema.parse(policy) };
}

function setSource(s: Scenario, source: Record<string, unknown>): void {
  const parsed = sourceConfigSchema.parse(source);
  s.ds = { ...s.ds, source: parsed, feeds: { ...s.ds.feeds, main: { ...s.ds.feeds.main!, source: parsed } } } as typeof s.ds;
}

const view = (r: DatasetRecord) => `${r.record_id}|${r.display_name}|${r.api_value}|${r.active}`;

/** The steps' sync summaries' counts and the dataset at the end, with the policy on or off. */
async function outcome(on: boolean, policy: Record<string, unknown>, steps: Step[]): Promise<{ sums: unknown[]; records: string[] }> {
  const s = await scenario({ policy: { ...policy, unchanged_rows: on } });
  open.push(s);
  const sums: unknown[] = [];
  for (const step of steps) {
    const r = (await step(s)) as Record<string, unknown> | undefined;
    if (r && typeof r === "object" && "result" in r) sums.push({ result: r.result, adds: r.adds, changes: r.changes, deletes: r.deletes });
  }
  return { sums, records: s.published().map(view).sort() };
}

async function same(policy: Record<string, unknown>, steps: (on: boolean) => Step[]): Promise<void> {
  const off = await outcome(false, policy, steps(false));
  const on = await outcome(true, policy, steps(true));
  expect(on.records).toEqual(off.records);
  expect(on.sums).toEqual(off.sums);
}

const N = 100;
const all = recs(N);
const sync = (file: (s: Scenario) => Promise<string>): Step => async (s) => s.engine.sync(s.ds, { file: await file(s) });

describe('review rv18: unchanged rows read as the full read would', () => {
  it('probe: a row moved 40 places and one edited', async () => {
    const moved = [...all.slice(1, 41), all[0]!, ...all.slice(41)].map((r, i) => (i === 70 ? { ...r, display_name: 'Edited' } : r));
    await same({}, () => [sync((s) => s.writeExport(all)), sync((s) => s.writeExport(moved))]);
  });

  it('probe: skip_rows, a kept row turns into a row error', async () => {
    const bad = lines(all).map((l, i) => (i === 10 ? `${all[10]!.record_id},only-two` : l));
    await same({ guards: { max_deletes: 50 } }, () => [
      async (s) => setSource(s, { type: 'csv', on_row_errors: 'skip_rows', max_bad_row_ratio: 0.5 }),
      sync((s) => s.writeExport(all)),
      sync((s) => writeLines(s, 'bad.csv', bad)),
    ]);
  });

  it('probe: ownership source -> full between two syncs of the same file, a portal record not in the file', async () => {
    await same({ ownership: 'source' }, (on) => [
      sync((s) => s.writeExport(all)),
      async (s) => s.em.emulator.portalPublish('shop-1', { upsert: [{ record_id: 'p-1', display_name: 'Portal', api_value: 'p1', aliases: [], attributes: {}, active: true }] }),
      sync((s) => s.writeExport(all)),
      async (s) => setPolicy(s, { ownership: 'full', unchanged_rows: on, guards: { max_deletes: 50 } }),
      sync((s) => s.writeExport(all)),
    ]);
  });

  it('probe: ownership source -> full once the kept rows are stamped, a portal record not in the file', async () => {
    const portal = { record_id: 'p-1', display_name: 'Portal', api_value: 'p1', aliases: [], attributes: {}, active: true };
    await same({ ownership: 'source' }, (on) => [
      sync((s) => s.writeExport(all)),
      async (s) => s.em.emulator.portalPublish('shop-1', { upsert: [portal] }),
      sync((s) => s.writeExport(all)),
      sync((s) => s.writeExport(all)),
      async (s) => setPolicy(s, { ownership: 'full', unchanged_rows: on, guards: { max_deletes: 50 } }),
      sync((s) => s.writeExport(all)),
    ]);
  });

  it('probe: ownership source -> full, a portal record the file lists too', async () => {
    const portal = { record_id: 'p-1', display_name: 'Portal', api_value: 'p1', aliases: [], attributes: {}, active: true };
    const withP = [...all, { ...portal, display_name: 'FromFile' }];
    await same({ ownership: 'source' }, (on) => [
      sync((s) => s.writeExport(all)),
      async (s) => s.em.emulator.portalPublish('shop-1', { upsert: [portal] }),
      sync((s) => s.writeExport(withP)),
      sync((s) => s.writeExport(withP)),
      sync((s) => s.writeExport(withP)),
      async (s) => setPolicy(s, { ownership: 'full', unchanged_rows: on, guards: { max_deletes: 50 } }),
      sync((s) => s.writeExport(withP)),
    ]);
  });

  it('probe: a server that refuses one record write of the plan (422), the same file again', async () => {
    const edited = all.map((r, i) => (i === 41 || i === 9 ? { ...r, display_name: 'Edited' } : r));
    await same({}, () => [
      sync((s) => s.writeExport(all)),
      async (s) => s.em.emulator.faults.add({ path: /records\/r-042/, status: 422, code: 'VALIDATION_FAILED', count: 1 }),
      sync((s) => s.writeExport(edited)),
      sync((s) => s.writeExport(edited)),
      sync((s) => s.writeExport(edited)),
    ]);
  });

  it('probe: a display_name transform added to the mapping between syncs of the same file', async () => {
    await same({}, () => [
      sync((s) => s.writeExport(all)),
      sync((s) => s.writeExport(all)),
      async (s) => {
        const mapping = mappingConfigSchema.parse({ fields: { record_id: 'SKU', display_name: { column: 'Name', transforms: ['uppercase'] }, api_value: 'Code' } });
        s.ds = { ...s.ds, mapping, feeds: { ...s.ds.feeds, main: { ...s.ds.feeds.main!, mapping } } } as typeof s.ds;
      },
      sync((s) => s.writeExport(all)),
    ]);
  });

  for (const prefer_import of [false, true]) {
    it(`probe: a replace job (max_per_record_changes 2, prefer_import ${prefer_import}) for 5 edits and 2 deletes`, async () => {
      const next = all.filter((_, i) => i !== 30 && i !== 60).map((r, i) => (i % 17 === 2 ? { ...r, display_name: `${r.display_name} new` } : r));
      await same({ replace: { max_per_record_changes: 2, prefer_import } }, () => [sync((s) => s.writeExport(all)), sync((s) => s.writeExport(next)), sync((s) => s.writeExport(next))]);
    });
  }

  it('probe: a portal record listed by the file as it is, then a second, changed row of its id', async () => {
    const portal = { record_id: 'p-1', display_name: 'Portal', api_value: 'p1', aliases: [], attributes: {}, active: true };
    const withP = [...all.slice(0, 50), portal, ...all.slice(50)];
    const dup = [...lines(all.slice(0, 50)), ...lines([portal]), ...lines(all.slice(50, 70)), 'p-1,Other,p1', ...lines(all.slice(70))];
    await same({ ownership: 'source' }, () => [
      async (s) => s.em.emulator.portalPublish('shop-1', { upsert: [portal] }),
      sync((s) => s.writeExport(withP)),
      sync((s) => s.writeExport(withP)),
      sync((s) => s.writeExport(withP)),
      sync((s) => writeLines(s, 'dup.csv', dup)),
    ]);
  });

  it('probe: min_records and max_row_drop_ratio with 10 of 100 rows gone', async () => {
    const fewer = all.filter((_, i) => i % 10 !== 4);
    await same({ guards: { min_records: 95, max_deletes: 50, max_row_drop_ratio: 0.05 } }, () => [sync((s) => s.writeExport(all)), sync((s) => s.writeExport(fewer))]);
  });

  it('probe: max_row_drop_ratio alone with 8 of 100 rows gone, then 3 more', async () => {
    const fewer = all.filter((_, i) => i % 12 !== 4);
    const fewer2 = fewer.filter((_, i) => i % 30 !== 7);
    await same({ guards: { max_deletes: 50, max_row_drop_ratio: 0.05 } }, () => [sync((s) => s.writeExport(all)), sync((s) => s.writeExport(fewer2)), sync((s) => s.writeExport(fewer)), sync((s) => s.writeExport(fewer2))]);
  });

  it('probe: an exact duplicate row added', async () => {
    const dup = [...lines(all.slice(0, 50)), lines([all[5]!])[0]!, ...lines(all.slice(50))];
    await same({}, () => [sync((s) => s.writeExport(all)), sync((s) => writeLines(s, 'dup.csv', dup))]);
  });

  it('probe: CRLF and BOM added to the same rows', async () => {
    const crlf = async (s: Scenario) => {
      const file = join(s.dir, 'crlf.csv');
      await writeFile(file, '\ufeff' + ['SKU,Name,Code', ...lines(all).map((l, i) => (i === 3 ? l.replace('Item', 'Changed') : l))].join('\r\n') + '\r\n');
      return file;
    };
    await same({}, () => [sync((s) => s.writeExport(all)), sync(crlf)]);
  });

  it('probe: quoted cell with embedded newline vs the same text unquoted split', async () => {
    const a = [...lines(all.slice(0, 20)), `r-900,"two\nlines",c900`, ...lines(all.slice(20))];
    const b = [...lines(all.slice(0, 20)), `r-900,"two\nlines",c900`, ...lines(all.slice(20)).map((l, i) => (i === 5 ? l + 'x' : l))];
    await same({}, () => [sync((s) => writeLines(s, 'a.csv', a)), sync((s) => writeLines(s, 'b.csv', b))]);
  });
});

const stockMapping = { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'Code', 'attributes.stock': { column: 'Stock', transforms: [{ number: {} }] } } };

async function writeStock(s: Scenario, name: string, stocks: Array<string | number>): Promise<string> {
  const file = join(s.dir, name);
  await writeFile(file, ['SKU,Name,Code,Stock', ...all.map((r, i) => `${r.record_id},${r.display_name},${r.api_value},${stocks[i]}`)].join('\n') + '\n');
  return file;
}

async function outcomeWith(on: boolean, policy: Record<string, unknown>, steps: Step[]): Promise<{ sums: unknown[]; records: string[] }> {
  const s = await scenario({ policy: { ...policy, unchanged_rows: on }, mapping: stockMapping });
  open.push(s);
  const sums: unknown[] = [];
  for (const step of steps) {
    const r = (await step(s)) as Record<string, unknown> | undefined;
    if (r && typeof r === 'object' && 'result' in r) sums.push({ result: r.result, adds: r.adds, changes: r.changes, deletes: r.deletes, read: (r.read as { path?: string } | undefined)?.path });
  }
  return { sums, records: s.published().map((r) => `${view(r)}|${JSON.stringify(r.attributes)}`).sort() };
}

async function sameWith(policy: Record<string, unknown>, steps: Step[]): Promise<void> {
  const off = await outcomeWith(false, policy, steps);
  const on = await outcomeWith(true, policy, steps);
  expect(on.records).toEqual(off.records);
  expect(on.sums.map((x) => ({ ...(x as object), read: undefined }))).toEqual(off.sums.map((x) => ({ ...(x as object), read: undefined })));
  console.log('ON', JSON.stringify(on.sums));
}

const xmlText = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** An XLSX export of SKU,Name,Code with inline strings (names written as the XML has them: `_xHHHH_` escapes stay). */
async function writeXlsx(s: Scenario, name: string, rows: Array<[string, string, string]>): Promise<string> {
  const cell = (col: string, r: number, t: string) => `<c r="${col}${r}" t="inlineStr"><is><t>${t}</t></is></c>`;
  const xml = [['SKU', 'Name', 'Code'] as [string, string, string], ...rows].map((row, i) => `<row r="${i + 1}">${cell('A', i + 1, xmlText(row[0]))}${cell('B', i + 1, row[1])}${cell('C', i + 1, xmlText(row[2]))}</row>`).join('');
  const file = join(s.dir, name);
  await writeFile(file, handMadeXlsx({ sheets: [{ name: 'S', rows: xml }] }));
  return file;
}

describe('review rv18: a hostile workbook', () => {
  const rowsWith = (name: string): Array<[string, string, string]> => all.map((r, i) => [r.record_id, i === 3 ? name : r.display_name, r.api_value]);
  // D2 (rv18): an XLSX cell may spell a lone surrogate (`_xD800_`); the record keeps it (published as such), but the
  // kept row is written as UTF-8, where it becomes U+FFFD. The next export whose cell holds U+FFFD itself equals
  // that kept row and is taken as unchanged: the full read publishes the new name, the kept-rows read does not.
  it('D2: a lone surrogate then U+FFFD in the same cell is published as the full read would', async () => {
    await same({}, () => [
      async (s) => setSource(s, { type: 'xlsx' }),
      sync((s) => writeXlsx(s, 'a.xlsx', rowsWith('Bad _xD800_ name'))),
      sync((s) => writeXlsx(s, 'b.xlsx', rowsWith('Bad \uFFFD name'))),
    ]);
  });
  // A cell spelling a NUL (`_x0000_`) makes its kept row one never compared (`x`); its record, later left out of
  // the export, must still be deleted (the kept row is gone as any other): the reader skipped `x` rows with an id.
  it('a record whose row held a NUL cell, then left out of the export, is deleted as the full read would', async () => {
    const without = rowsWith('Bad _x0000_ name').filter((_, i) => i !== 3);
    await same({}, () => [
      async (s) => setSource(s, { type: 'xlsx' }),
      sync((s) => writeXlsx(s, 'a.xlsx', rowsWith('Bad _x0000_ name'))),
      sync((s) => writeXlsx(s, 'b.xlsx', without)),
    ]);
  });
});

describe('review rv18: value guards through the kept rows', () => {
  const base = all.map((_, i) => 10 + i);
  it('probe: 20 of 100 stocks to 0 (20% < 25%: published in full)', async () => {
    const zeroed = base.map((v, i) => (i % 5 === 0 ? 0 : v));
    await sameWith({}, [sync((s) => writeStock(s, 'a.csv', base)), sync((s) => writeStock(s, 'b.csv', zeroed))]);
  });
  it('probe: 4 stocks jump x20, max_changed_ratio 0.05 on stock', async () => {
    const jumped = base.map((v, i) => (i % 25 === 3 ? v * 20 : v));
    await sameWith({ guards: { values: [{ field: 'attributes.stock', max_changed_ratio: 0.05, jump_factor: 10, max_jump_ratio: 0.05 }] } }, [sync((s) => writeStock(s, 'a.csv', base)), sync((s) => writeStock(s, 'b.csv', jumped))]);
  });
  it('probe: 30 of 100 stocks to 0 over two exports (held, then the same export again)', async () => {
    const zeroed = base.map((v, i) => (i % 10 < 3 ? 0 : v));
    await sameWith({ guards: { max_deletes: 50 } }, [sync((s) => writeStock(s, 'a.csv', base)), sync((s) => writeStock(s, 'b.csv', zeroed)), sync((s) => writeStock(s, 'c.csv', zeroed))]);
  });
  it('probe: a stock cell emptied on a few rows, then filled again', async () => {
    const emptied = base.map((v, i) => (i % 20 === 1 ? '' : v));
    await sameWith({}, [sync((s) => writeStock(s, 'a.csv', base)), sync((s) => writeStock(s, 'b.csv', emptied)), sync((s) => writeStock(s, 'c.csv', emptied)), sync((s) => writeStock(s, 'd.csv', base))]);
  });
});

describe('review rv18: the kept-rows folder damaged', () => {
  // D1 (rv18): a kept-rows file that cannot be written (here kept-rows.next is a directory; as well a folder left
  // root-owned by a `sync` run as root, or a full disk) stops the whole sync "INTERNAL: internal error: ... EISDIR":
  // nothing is published, every later export too, although the full read needs none of those files.
  it('D1: the kept rows cannot be written (kept-rows.next not writable): the export is still published, read in full', async () => {
    const s = await scenario({ policy: { unchanged_rows: true } });
    open.push(s);
    expect(await s.engine.sync(s.ds, { file: await s.writeExport(all) })).toMatchObject({ result: 'published' });
    const dir = keptDirOf(planDir(s.db.path), 'shop-1');
    mkdirSync(join(dir, NEXT_FILE));
    const edited = all.map((r, i) => (i === 7 ? { ...r, display_name: 'Edited' } : r));
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(edited) });
    expect(sum).toMatchObject({ result: 'published', changes: 1 });
    expect(s.published().find((r) => r.record_id === 'r-008')?.display_name).toBe('Edited');
  });

  it('probe: the kept rows file truncated to its stamped size with other bytes', async () => {
    const s = await scenario({ policy: { unchanged_rows: true } });
    open.push(s);
    expect(await s.engine.sync(s.ds, { file: await s.writeExport(all) })).toMatchObject({ result: 'published' });
    const dir = keptDirOf(planDir(s.db.path), 'shop-1');
    const text = readFileSync(join(dir, KEPT_FILE), 'utf8');
    // The kept row of r-008 says "Edited" (same size): the published record says otherwise.
    writeFileSync(join(dir, KEPT_FILE), text.replace('Item r-008', 'Edite r-008'));
    const edited = all.map((r, i) => (i === 7 ? { ...r, display_name: 'Edite r-008' } : r));
    const sum = await s.engine.sync(s.ds, { file: await s.writeExport(edited) });
    expect(sum).toMatchObject({ result: 'published', changes: 1 });
    expect(s.published().find((r) => r.record_id === 'r-008')?.display_name).toBe('Edite r-008');
  });
});
