import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { configSchema, type DatasetConfig } from '../../src/config/schema.js';
import { feedView, readerMapping } from '../../src/feeds/view.js';
import { readExport, readExportEach } from '../../src/sources/read.js';
import { rejectFilePath } from '../../src/sources/reject-file.js';
import type { ExportResult, RecordBatch } from '../../src/sources/types.js';
import { readShared } from '../../src/sync/executor/shared-read.js';
import { readSource, withRejectFile, type SourceRead } from '../../src/sync/executor/source-read.js';
import { handMadeXlsx } from '../sources/xlsx-parts.js';

// Issue 13's fan-out reads a shared export once for every dataset taking it: one decode and parse, each
// dataset's rows filter, mapping and sort. Each dataset must get exactly the read it would have made alone:
// records, row errors, reject file, counts, refusals.

const HEADER = 'SKU,Name,Store,Qty,Stock_003';

/** Store 001 and 002 take their rows (Store column, Qty), store 003 its column; `extra` adds more takers. */
function chainConfig(source: Record<string, unknown> = {}, extra: Record<string, unknown> = {}): DatasetConfig[] {
  const api = { base_url: 'http://127.0.0.1:1', key: { env: 'K' } };
  const feed = (rows: string | null, stock: string) => ({
    role: 'full',
    from: 'ho',
    ...(rows ? { rows: { column: 'Store', equals: rows } } : {}),
    mapping: { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'SKU', 'attributes.stock': { column: stock, transforms: [{ integer: {} }] } } },
  });
  const datasets: Record<string, unknown> = {
    'store-001': { api, feeds: { stock: feed('001', 'Qty') } },
    'store-002': { api, feeds: { stock: feed('002', 'Qty') } },
    'store-003': { api, feeds: { stock: feed(null, 'Stock_003') } },
  };
  for (const [name, stock] of Object.entries(extra)) datasets[name] = { api, feeds: { stock: feed(null, stock as string) } };
  const config = configSchema.parse({ exports: { ho: { watch: { path: '/srv/ho' }, source: { type: 'csv', ...source } } }, datasets });
  return Object.entries(config.datasets).map(([name, ds]) => feedView({ ...ds, name, file: '/etc/dataset-connector/connector.yaml', api: { ...ds.api, dataset_id: name } }, 'stock'));
}

/** A read as compared: its sorted records listed, its refusal by code, message and context, its reject file's text. */
async function shown(r: SourceRead) {
  const written = await withRejectFile(r);
  const reject = written.rejectFile ? await readFile(written.rejectFile, 'utf8') : null;
  if (written.rejectFile) await rm(written.rejectFile);
  return {
    ...written,
    sorted: written.sorted ? [...written.sorted.entries()] : null,
    count: written.sorted?.count ?? null,
    rejected: written.rejected ? { code: written.rejected.code, message: written.rejected.message, context: written.rejected.context } : null,
    badRows: { ids: [...(written.badRows?.ids ?? [])].sort(), withoutId: written.badRows?.withoutId },
    reject,
  };
}

/** Each dataset's read alone (readSource, as a sync of its own does), then all of them in one pass (readShared). */
async function bothWays(content: string | Buffer, views: DatasetConfig[], name = 'stock-1.csv', sha256?: string) {
  const dir = await mkdtemp(join(tmpdir(), 'dc-shared-read-'));
  const file = join(dir, name);
  await writeFile(file, content);
  const alone = [];
  for (const [i, ds] of views.entries()) {
    const work = join(dir, `alone-${i}`);
    await mkdir(work);
    const r = await readSource(file, ds.source, readerMapping(ds), work, sha256 ? { sha256 } : {});
    // readSource writes the reject file itself: take it as withRejectFile would name it.
    alone.push(await shown({ ...r, rejectFile: null }));
    expect(r.rejectFile).toBe(r.rowErrors.length > 0 ? rejectFilePath(file) : null);
  }
  const plans = join(dir, 'plans');
  const shared = await readShared(plans, views, { file, ...(sha256 ? { sha256 } : {}) });
  const once = [];
  for (const r of shared.reads) once.push(await shown(r!));
  shared.dispose();
  expect(await readdir(plans)).toEqual([]);
  return { alone, once, file };
}

describe('a shared export read once for several datasets (issue 13 fan-out)', () => {
  it('three datasets (rows by a store column, a stock column) get the records, row errors, reject files and counts of three separate reads', async () => {
    const content = [
      HEADER,
      'A1,Apple,001,5,105',
      'A2,Pear,001,6,106',
      '',
      'B1,Bean,002,many,107',
      'B2,Kale,002,8,108',
      'A1,Apple again,001,9,109',
      'C1,Corn,003,4,110',
      'Z9,Zed,002,3,lots',
      'E1,Egg,002,2,112',
    ].join('\n') + '\n';
    for (const source of [{}, { on_row_errors: 'skip_rows', max_bad_row_ratio: 0.5 }]) {
      const { alone, once } = await bothWays(content, chainConfig(source));
      expect(once).toEqual(alone);
      // The three are not the same read: each has its own rows and its own errors.
      expect(alone.map((r) => [r.rows, r.records, r.rowErrors.map((e) => `${e.line}:${e.code}`)])).toEqual([
        [8, source.on_row_errors ? 2 : 0, ['7:DUPLICATE_KEY']],
        [8, source.on_row_errors ? 3 : 0, ['5:TRANSFORM_FAILED']],
        [8, source.on_row_errors ? 6 : 0, ['7:DUPLICATE_KEY', '9:TRANSFORM_FAILED']],
      ]);
      expect(alone.map((r) => r.reject?.split('\r\n').length)).toEqual([3, 3, 4]);
      if (source.on_row_errors) expect(once[1]!.sorted!.map((e) => e.record_id)).toEqual(['B2', 'E1', 'Z9']);
    }
  });

  it('the counts of each mapping (filtered rows, bad ids) are those of a read through it alone', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'dc-shared-read-'));
    const file = join(dir, 'stock.csv');
    await writeFile(file, `${HEADER}\nA1,Apple,001,5,105\nB1,Bean,002,x,107\nC1,Corn,003,4,110\nD1,Dill,001,1\n`);
    const views = chainConfig({ on_row_errors: 'skip_rows', max_bad_row_ratio: 1 });
    const collect = async (batches: AsyncIterable<RecordBatch>) => {
      const out: RecordBatch = { records: [], lines: [] };
      for await (const b of batches) out.records.push(...b.records), out.lines.push(...b.lines);
      return out;
    };
    const alone: Array<{ result: ExportResult; out: RecordBatch }> = [];
    for (const ds of views) {
      const reader = readExport(file, ds.source, readerMapping(ds));
      const out = await collect(reader.batches());
      alone.push({ result: reader.result!, out });
    }
    const pass = readExportEach(file, views[0]!.source, views.map((ds) => readerMapping(ds)));
    const outs = views.map((): RecordBatch => ({ records: [], lines: [] }));
    for await (const batches of pass.batches()) batches.forEach((b, i) => b && (outs[i]!.records.push(...b.records), outs[i]!.lines.push(...b.lines)));
    expect(pass.results!.map((result, i) => ({ result, out: outs[i] }))).toEqual(alone);
    expect(alone.map((a) => [a.out.records.map((r) => r.record_id), a.result.row_errors.map((e) => `${e.line}:${e.code}`), a.result.bad_ids])).toEqual([
      [['A1'], ['5:COLUMN_COUNT'], []],
      [[], ['3:TRANSFORM_FAILED', '5:COLUMN_COUNT'], ['B1']],
      [['A1', 'B1', 'C1'], ['5:COLUMN_COUNT'], []],
    ]);
    expect(alone.map((a) => a.result.counts)).toEqual([
      { rows: 4, filtered: 2, records: 1, bad_rows: 1, row_errors: 1 },
      { rows: 4, filtered: 2, records: 0, bad_rows: 2, row_errors: 2 },
      { rows: 4, filtered: 0, records: 3, bad_rows: 1, row_errors: 1 },
    ]);
  });

  it('a column one dataset names and the file lacks refuses the file for that dataset alone; the others read on', async () => {
    const views = chainConfig({}, { 'store-009': 'Stock_009' });
    const { alone, once } = await bothWays(`${HEADER}\nA1,Apple,001,5,105\nB1,Bean,002,6,106\n`, views);
    expect(once).toEqual(alone);
    expect(once.map((r) => r.rejected?.code ?? null)).toEqual([null, null, null, 'COLUMN_NOT_FOUND']);
    expect(once.map((r) => r.records)).toEqual([1, 1, 2, 0]);
  });

  it('a refusal of the file itself is every dataset\'s, with the message a read of its own gives (naming the file and what to do)', async () => {
    const views = chainConfig();
    const cases: Array<[string, string | Buffer, Record<string, unknown>?]> = [
      ['TRUNCATED', `${HEADER}\nA1,Apple,001,5,105\nB1,Bean,0`],
      ['EMPTY_FILE', ''],
      ['HEADER_ONLY', `${HEADER}\n`],
      ['REPEATED_HEADER', `${HEADER}\nA1,Apple,001,5,105\n${HEADER}\nA1,Apple,001,6,106\n`],
      ['LIMIT_ROWS', `${HEADER}\nA1,Apple,001,5,105\nA2,Pear,001,6,106\n`, { limits: { max_rows: 1 } }],
      ['LIMIT_FILE_BYTES', `${HEADER}\nA1,Apple,001,5,105\n`, { limits: { max_file_bytes: 10 } }],
      ['BAD_ENCODING', Buffer.concat([Buffer.from(`${HEADER}\nA1,App`), Buffer.from([0xff, 0xfe, 0x41]), Buffer.from('le,001,5,105\n')]), { encoding: 'utf-8' }],
    ];
    for (const [code, content, source] of cases) {
      const { alone, once, file } = await bothWays(content, chainConfig(source ?? {}));
      expect(once, code).toEqual(alone);
      for (const r of once) {
        expect(r.rejected?.code, code).toBe(code);
        expect(r.rejected!.message).toContain(file);
      }
      expect(views).toHaveLength(3);
    }
  });

  it('a file whose bytes are not those hashed when it was found is FILE_CHANGED for every dataset (read again later)', async () => {
    const content = `${HEADER}\nA1,Apple,001,5,105\nB1,Bean,002,6,106\n`;
    const { alone, once } = await bothWays(content, chainConfig(), 'stock-1.csv', 'ab'.repeat(32));
    expect(once).toEqual(alone);
    expect(once.map((r) => [r.rejected?.code, r.rejected?.context.setting, r.fileHash])).toEqual(Array(3).fill(['FILE_CHANGED', 'watch.settle_ms', 'ab'.repeat(32)]));
  });

  it('an XLSX export is read once for every dataset as well', async () => {
    const cell = (ref: string, v: string) => `<c r="${ref}" t="inlineStr"><is><t>${v}</t></is></c>`;
    const rows = [HEADER.split(','), ['A1', 'Apple', '001', '5', '105'], ['B1', 'Bean', '002', 'many', '107'], ['C1', 'Corn', '003', '4', '110']]
      .map((r, i) => `<row r="${i + 1}">${r.map((v, k) => cell(`${'ABCDE'[k]}${i + 1}`, v)).join('')}</row>`)
      .join('');
    const { alone, once } = await bothWays(handMadeXlsx({ sheets: [{ name: 'S', rows }] }), chainConfig({ type: 'xlsx' }), 'stock.xlsx');
    expect(once).toEqual(alone);
    expect(once.map((r) => r.rejected?.code ?? null)).toEqual([null, 'ROW_ERRORS', null]);
  });
});
