// Benchmark of the read path (issue 3) and of the diff (issue 4): `npm run bench`.
// full-csv: decode → parse → map (7 fields, 12 transforms: template, split, number, integer,
// null_words, boolean words, …) → validate (A6) → duplicate keys, consumed a batch at a time;
// full-csv-records: the same, one record at a time; full-csv-light: an A14-style mapping.
// full-xlsx: the same mapping over a 100,000-row XLSX through our reader (src/sources/xlsx/);
// exceljs-xlsx: exceljs's streaming reader alone on that file (rows read, nothing done with them),
// the reader we used before, for comparison; full-xlsx-ja: the same with distinct Japanese names.
// Each measurement runs in its own child process so that peak RSS (maxRSS) is its own. The machine
// may be shared, so the main ones run BENCH_RUNS times (default 3), interleaved with their
// yardstick, and the verdict uses the median CPU time and the highest peak RSS.
// The children run with the node flags the connector ships with (systemd ExecStart = npm start).
// BENCH_ONLY=xlsx or csv runs one part. XLSX verdict: ≥40k rows/s by wall clock and by CPU, <250 MB.
// Then test/bench/diff.bench.mjs diffs BENCH_DIFF_RECORDS records (default 1,000,000; 0 skips it).
import { spawnSync } from 'node:child_process';
import { createReadStream, createWriteStream, readFileSync } from 'node:fs';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { once } from 'node:events';

const CSV_ROWS = Number(process.env.BENCH_CSV_ROWS ?? 1_000_000);
const XLSX_ROWS = Number(process.env.BENCH_XLSX_ROWS ?? 100_000);
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
const DIFF_RECORDS = Number(process.env.BENCH_DIFF_RECORDS ?? 1_000_000);
// BENCH_ONLY=xlsx skips the CSV part (BENCH_ONLY=csv the XLSX part).
const ONLY = process.env.BENCH_ONLY ?? '';
const XLSX_OPTIONS = { sharedStrings: 'cache', styles: 'cache', hyperlinks: 'ignore', worksheets: 'emit', entries: 'ignore' };
const self = fileURLToPath(import.meta.url);
const dist = new URL('../../dist/', import.meta.url);

const mappingInput = {
  fields: {
    record_id: { column: 'SKU', transforms: ['trim', 'strip_prefix'] },
    display_name: { template: '{Name} {Size}', transforms: ['collapse_spaces'] },
    api_value: { column: 'Code', transforms: ['lowercase'] },
    aliases: { column: 'Aliases', transforms: ['split'] },
    'attributes.price': { column: 'Price', transforms: ['number'] },
    'attributes.stock': { column: 'In stock [Main Street]', transforms: [{ null_words: ['not stocked'] }, 'integer'] },
    active: { column: 'Published', transforms: [{ boolean: { true_words: ['表示'], false_words: ['非表示'] } }] },
  },
};
// The A14-style mapping: columns straight to fields, aliases split, two typed attributes.
const lightMappingInput = {
  fields: {
    record_id: 'SKU',
    display_name: 'Name',
    api_value: 'Code',
    aliases: 'Aliases',
    'attributes.price': { column: 'Price', transforms: ['number'] },
    'attributes.size': 'Size',
  },
};
const HEADER = ['SKU', 'Name', 'Size', 'Code', 'Aliases', 'Price', 'In stock [Main Street]', 'Published'];
function row(i) {
  return [`SKU-${i}`, `Product ${i % 977}`, ['S', 'M', 'L'][i % 3], `CODE${i}`, `p${i}|item ${i}`, `${(i % 5000) + 1},${String(i % 100).padStart(2, '0')}`.replace(',', '.'), i % 50 === 0 ? 'not stocked' : String((i % 300) - 20), i % 7 === 0 ? '非表示' : '表示'];
}

async function writeCsv(file, rows) {
  const out = createWriteStream(file);
  out.write(HEADER.join(',') + '\n');
  let buf = '';
  for (let i = 1; i <= rows; i++) {
    buf += row(i).join(',') + '\n';
    if (buf.length > 1 << 16) {
      if (!out.write(buf)) await once(out, 'drain');
      buf = '';
    }
  }
  out.end(buf);
  await once(out, 'finish');
}

/** `japanese`: every product named differently in Japanese, as a Japanese shop's strings table holds them. */
async function writeXlsx(file, rows, japanese = false) {
  const { default: ExcelJS } = await import('exceljs');
  const wb = new ExcelJS.stream.xlsx.WorkbookWriter({ filename: file, useSharedStrings: true });
  const ws = wb.addWorksheet('Stock');
  ws.addRow(HEADER).commit();
  for (let i = 1; i <= rows; i++) {
    const r = row(i);
    if (japanese) r[1] = `髙島屋の商品 ${i} 番 ①㈱`;
    ws.addRow([r[0], r[1], r[2], r[3], r[4], Number(r[5]), r[6] === 'not stocked' ? r[6] : Number(r[6]), r[7]]).commit();
  }
  ws.commit();
  await wb.commit();
}

// ---- child measurements ----
async function child(kind, file) {
  // Modules are loaded before the clock starts: the figures are of reading, not of start-up.
  const { parse } = await import('csv-parse');
  const { sourceConfigSchema } = await import(new URL('sources/config.js', dist));
  const { mappingConfigSchema } = await import(new URL('mapping/config.js', dist));
  const { readExport } = await import(new URL('sources/read.js', dist));
  if (kind.endsWith('xlsx')) await import(new URL('sources/xlsx.js', dist));
  const { default: ExcelJS } = kind === 'exceljs-xlsx' ? await import('exceljs') : { default: null };
  global.gc?.();
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  let n = 0;
  if (kind === 'bare-csv') {
    for await (const rec of createReadStream(file, { highWaterMark: 256 * 1024 }).pipe(parse({ relax_column_count: true }))) n += rec.length > 0 ? 1 : 0;
    n -= 1; // header
  } else if (kind === 'exceljs-xlsx') {
    const reader = new ExcelJS.stream.xlsx.WorkbookReader(createReadStream(file, { highWaterMark: 256 * 1024 }), XLSX_OPTIONS);
    for await (const sheet of reader) for await (const row of sheet) n += row.values.length > 0 ? 1 : 0;
    n -= 1; // header
  } else {
    const source = sourceConfigSchema.parse({ type: kind.endsWith('xlsx') ? 'xlsx' : 'csv' });
    const mapping = mappingConfigSchema.parse(kind === 'full-csv-light' ? lightMappingInput : mappingInput);
    const reader = readExport(file, source, mapping);
    if (kind === 'full-csv-records') {
      for await (const _r of reader) n++;
    } else {
      for await (const b of reader.batches()) n += b.records.length;
    }
    if (reader.result.rejected) throw reader.result.rejected;
  }
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const c = process.cpuUsage(c0);
  process.stdout.write(JSON.stringify({ kind, rows: n, ms, cpuMs: (c.user + c.system) / 1000, maxRssMb: process.resourceUsage().maxRSS / 1024 }));
}

// The V8 flags the connector ships with (systemd ExecStart; package.json "start" must agree), so
// that the figures are of the process a shop runs. BENCH_NODE_FLAGS overrides them ("" for none).
function shippedNodeFlags() {
  const unit = readFileSync(fileURLToPath(new URL('../../systemd/dataset-connector.service', import.meta.url)), 'utf8');
  const exec = unit.split('\n').find((l) => l.startsWith('ExecStart='));
  const unitFlags = (exec?.match(/node((?:\s+--[\w-]+(?:=\S+)?)*)\s+\S*main\.js/)?.[1] ?? '').trim().split(/\s+/).filter(Boolean);
  const pkg = JSON.parse(readFileSync(fileURLToPath(new URL('../../package.json', import.meta.url)), 'utf8'));
  const startFlags = (pkg.scripts.start.match(/^node((?:\s+--[\w-]+(?:=\S+)?)*)\s/)?.[1] ?? '').trim().split(/\s+/).filter(Boolean);
  if (unitFlags.join(' ') !== startFlags.join(' ')) throw new Error(`node flags differ: systemd ExecStart ${unitFlags.join(' ')} vs npm start ${startFlags.join(' ')}`);
  return unitFlags;
}
const NODE_FLAGS = process.env.BENCH_NODE_FLAGS !== undefined ? process.env.BENCH_NODE_FLAGS.split(/\s+/).filter(Boolean) : shippedNodeFlags();

function measure(kind, file) {
  const r = spawnSync(process.execPath, [...NODE_FLAGS, '--expose-gc', self, '--child', kind, file], { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (r.status !== 0) throw new Error(`${kind} failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** `RUNS` runs of each kind, interleaved so that each shares the machine's load with its yardstick. */
function measureRuns(kinds, file) {
  const runs = Object.fromEntries(kinds.map((k) => [k, []]));
  for (let i = 0; i < RUNS; i++) for (const k of kinds) runs[k].push(measure(k, file));
  return kinds.map((k) => summary(runs[k]));
}

/** Median wall and CPU time, highest peak RSS, and the CPU range. */
function summary(ms) {
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
  const cpus = ms.map((m) => m.cpuMs);
  return { kind: ms[0].kind, rows: ms[0].rows, ms: median(ms.map((m) => m.ms)), cpuMs: median(cpus), cpuMin: Math.min(...cpus), cpuMax: Math.max(...cpus), maxRssMb: Math.max(...ms.map((m) => m.maxRssMb)), runs: ms.length };
}

function show(m, base) {
  const rate = Math.round(m.rows / (m.ms / 1000)).toLocaleString('en');
  const cpuRate = Math.round(m.rows / (m.cpuMs / 1000)).toLocaleString('en');
  const rel = base ? `  ${(m.ms / base.ms).toFixed(2)}× ${base.kind} wall, ${(m.cpuMs / base.cpuMs).toFixed(2)}× CPU` : '';
  const spread = m.runs > 1 ? ` [${(m.cpuMin / 1000).toFixed(2)}–${(m.cpuMax / 1000).toFixed(2)}]` : '';
  console.log(
    `${m.kind.padEnd(18)} ${String(m.rows).padStart(9)} rows  wall ${(m.ms / 1000).toFixed(2).padStart(6)} s (${rate.padStart(9)} rows/s)  CPU ${(m.cpuMs / 1000).toFixed(2).padStart(6)} s${spread} (${cpuRate.padStart(9)} rows/s)  peak RSS ${m.maxRssMb.toFixed(0).padStart(4)} MB${rel}`,
  );
}

/** test/bench/diff.bench.mjs at `records`: its own time and peak RSS (it seeds its snapshot in a child of its own). */
function diffBench(records) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [fileURLToPath(new URL('diff.bench.mjs', import.meta.url)), String(records)], { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (r.status !== 0) throw new Error(`diff bench failed: ${r.stderr}`);
  const d = JSON.parse(r.stdout);
  const wall = ((performance.now() - t0) / 1000).toFixed(1);
  console.log(
    `diff: ${d.records.toLocaleString('en')} records against a ${d.counts.snapshot.toLocaleString('en')}-record snapshot: diff ${(d.diffMs / 1000).toFixed(2)} s, plan ${(d.planMs / 1000).toFixed(2)} s, peak RSS ${d.peakRssMB} MB (seeding ${(d.seedMs / 1000).toFixed(1)} s; ${wall} s in all)`,
  );
}

async function main() {
  const dir = await mkdtemp(join(tmpdir(), 'dc-bench-'));
  try {
    if (NODE_FLAGS.length > 0) console.log(`node flags (${process.env.BENCH_NODE_FLAGS !== undefined ? 'BENCH_NODE_FLAGS' : 'as shipped'}): ${NODE_FLAGS.join(' ')}`);
    const verdicts = [];
    if (ONLY !== 'xlsx') {
      const csv = join(dir, 'export.csv');
      await writeCsv(csv, CSV_ROWS);
      console.log(`CSV: ${CSV_ROWS.toLocaleString('en')} rows, ${((await stat(csv)).size / 1e6).toFixed(1)} MB; ${RUNS} run(s) each: median CPU [range], highest peak RSS`);
      const [bare, full] = measureRuns(['bare-csv', 'full-csv'], csv);
      show(bare);
      show(full, bare);
      show(measure('full-csv-records', csv), bare);
      show(measure('full-csv-light', csv), bare);
      // CPU time is the fairer yardstick on a shared machine; wall time is printed too.
      const csvOk = full.cpuMs <= 1.5 * bare.cpuMs && full.maxRssMb < 200;
      verdicts.push(`CSV ≤1.5× bare CPU and <200 MB: ${csvOk ? 'met' : 'NOT met'}`);
    }
    if (ONLY !== 'csv') {
      const xlsx = join(dir, 'export.xlsx');
      await writeXlsx(xlsx, XLSX_ROWS);
      console.log(`XLSX: ${XLSX_ROWS.toLocaleString('en')} rows, ${((await stat(xlsx)).size / 1e6).toFixed(1)} MB; ${RUNS} run(s) each`);
      const [exceljs, fx] = measureRuns(['exceljs-xlsx', 'full-xlsx'], xlsx);
      show(exceljs);
      show(fx, exceljs);
      // Rows per second as a shop sees them (wall clock) and per CPU second: both must reach 40k.
      const wallRate = fx.rows / (fx.ms / 1000);
      const cpuRate = fx.rows / (fx.cpuMs / 1000);
      const xlsxOk = wallRate >= 40_000 && cpuRate >= 40_000 && fx.maxRssMb < 250;
      verdicts.push(`XLSX ≥40k rows/s (wall ${Math.round(wallRate).toLocaleString('en')}, CPU ${Math.round(cpuRate).toLocaleString('en')}) and <250 MB (${fx.maxRssMb.toFixed(0)}): ${xlsxOk ? 'met' : 'NOT met'}`);
      // For information: the same rows with 100,000 distinct Japanese names (two bytes a character in memory).
      const ja = join(dir, 'export-ja.xlsx');
      await writeXlsx(ja, XLSX_ROWS, true);
      console.log(`XLSX, Japanese names: ${((await stat(ja)).size / 1e6).toFixed(1)} MB`);
      show({ ...measureRuns(['full-xlsx'], ja)[0], kind: 'full-xlsx-ja' }, fx);
    }
    console.log(`targets: ${verdicts.join('; ')}`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  if (DIFF_RECORDS > 0) diffBench(DIFF_RECORDS);
}

if (process.argv[2] === '--child') await child(process.argv[3], process.argv[4]);
else await main();
