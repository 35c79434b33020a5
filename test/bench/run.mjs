// The benchmarks: `npm run bench` (add `-- --json` for one JSON line per figure on stdout, to compare
// commits). Every figure is printed with its target and a verdict. Each measurement runs in a process of its
// own so that its peak RSS (maxRSS) is its own; the connector and the emulator never share one. The machine
// may be shared: wall-clock figures are then noisy, so CPU time (user + system) is given beside them, the
// yardstick (a bare csv-parse of the same file) is measured in the same run, interleaved, and each figure
// records the load average it was taken under. Peak RSS and request sizes do not depend on load.
//
// Parts (BENCH_ONLY=read,xlsx,diff,square,first,idle picks some; all by default):
//   read    decode → parse → map of a 1,000,000-row CSV beside a bare csv-parse (issue 3)
//   xlsx    100,000 rows of XLSX through our reader, beside exceljs's streaming reader (≥100k rows/s, ≤200 MB)
//   diff    read + diff + plan of a 100k / 1M / 3M-row export against a snapshot of as many records with 1%
//           changed (≤2× the bare parse, ≤256 MB, flat from 1M to 3M); and the opening of that snapshot at schema
//           14, where migration 15 fills its tallies (issue 13: time, CPU, peak RSS, for information)
//   square  a sync of a 200,000-row Square item export (47 columns) against the emulator, first and with 1%
//           of stocks changed (≤3× the bare parse, ≤200 MB), and where the time went
//   first   the first sync of 1,000,000 records, PUT /records and upload (≤300 MB; the server's view of the size)
//   idle    an idle daemon with three datasets (≤80 MB at every second of its idle window, ≤0.5 s CPU a minute), and
//           the same daemon idle again after one small sync per dataset (for information)
//   history a 100,000-record dataset after 30 days of 5-minute stock updates at 1% churn (issue 14): the state
//           database's size (≤200 MB) and `why` latency (≤50 ms), and how long the state a day ago takes to work out
//   feeds   issue 13: a stock-only update feed of 10,000 records of a 100,000-record dataset, read + merge + diff +
//           plan (≤1 s) beside a bare csv-parse of the same file, cold (a fresh process: the target's figure) and warm
//           (the same again in that process, as a daemon pays it); and a stock file every 5 minutes with 2% churn
//           against the emulator on an injected clock: the planner's choice and requests per minute (A24: 120)
//   fanout  issue 13's fan-out: a 100,000-row head-office file taken by three datasets (a store's rows, two stores'
//           columns), read once for all three (one parse, each one's mapping and sort) beside the three reading it
//           each (as before) and a bare csv-parse: the one pass ≤ 0.7× the three reads' CPU
// BENCH_RUNS (default 3) runs of each main figure with its yardstick: median CPU, highest peak RSS.
// BENCH_CSV_ROWS, BENCH_XLSX_ROWS, BENCH_DIFF_SIZES (100000,1000000,3000000), BENCH_SQUARE_ROWS (200000),
// BENCH_FIRST_ROWS (1000000), BENCH_IDLE_MS (60000), BENCH_HISTORY_DAYS (30), BENCH_FEED_RECORDS (100000),
// BENCH_FEED_CYCLES (12: one simulated hour), BENCH_FANOUT_ROWS (100000) scale them down for a quick look.
import { createReadStream, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { child, figure, median, say, startChild, stopChild, summary } from './figures.mjs';
import { LIGHT_MAPPING, MAPPING, writeCsv, writePreviousCsv, writeSquare, writeXlsx } from './exports.mjs';

const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
const CSV_ROWS = Number(process.env.BENCH_CSV_ROWS ?? 1_000_000);
const XLSX_ROWS = Number(process.env.BENCH_XLSX_ROWS ?? 100_000);
const DIFF_SIZES = (process.env.BENCH_DIFF_SIZES ?? '100000,1000000,3000000').split(',').map(Number).filter((n) => n > 0);
const SQUARE_ROWS = Number(process.env.BENCH_SQUARE_ROWS ?? 200_000);
const FIRST_ROWS = Number(process.env.BENCH_FIRST_ROWS ?? 1_000_000);
const FEED_RECORDS = Number(process.env.BENCH_FEED_RECORDS ?? 100_000);
const FEED_CYCLES = Number(process.env.BENCH_FEED_CYCLES ?? 12);
const ONLY = new Set((process.env.BENCH_ONLY ?? 'read,xlsx,diff,square,first,idle,history,feeds,fanout').split(',').map((s) => (s === 'csv' ? 'read' : s)));
const XLSX_OPTIONS = { sharedStrings: 'cache', styles: 'cache', hyperlinks: 'ignore', worksheets: 'emit', entries: 'ignore' };
const self = fileURLToPath(import.meta.url);
const here = (f) => fileURLToPath(new URL(f, import.meta.url));
const dist = new URL('../../dist/', import.meta.url);

// ---- child measurements of the read path ----
async function readChild(kind, file) {
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
    const mapping = mappingConfigSchema.parse(kind === 'full-csv-light' ? LIGHT_MAPPING : MAPPING);
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
  process.stdout.write(`${JSON.stringify({ kind, rows: n, ms, cpuMs: (c.user + c.system) / 1000, maxRssMb: process.resourceUsage().maxRSS / 1024 })}\n`);
}

// The V8 flags the connector ships with (systemd ExecStart; package.json "start" must agree), so
// that the figures are of the process a shop runs. BENCH_NODE_FLAGS overrides them ("" for none).
function shippedNodeFlags() {
  const unit = readFileSync(here('../../systemd/dataset-connector.service'), 'utf8');
  const exec = unit.split('\n').find((l) => l.startsWith('ExecStart='));
  const unitFlags = (exec?.match(/node((?:\s+--[\w-]+(?:=\S+)?)*)\s+\S*main\.js/)?.[1] ?? '').trim().split(/\s+/).filter(Boolean);
  const pkg = JSON.parse(readFileSync(here('../../package.json'), 'utf8'));
  const startFlags = (pkg.scripts.start.match(/^node((?:\s+--[\w-]+(?:=\S+)?)*)\s/)?.[1] ?? '').trim().split(/\s+/).filter(Boolean);
  if (unitFlags.join(' ') !== startFlags.join(' ')) throw new Error(`node flags differ: systemd ExecStart ${unitFlags.join(' ')} vs npm start ${startFlags.join(' ')}`);
  return unitFlags;
}
const NODE_FLAGS = process.env.BENCH_NODE_FLAGS !== undefined ? process.env.BENCH_NODE_FLAGS.split(/\s+/).filter(Boolean) : shippedNodeFlags();
const node = (script, ...args) => [...NODE_FLAGS, '--expose-gc', script, ...args];

const readMeasure = (kind, file) => child(node(self, '--child', kind, file));

/** `RUNS` runs of each measurement, interleaved so that each shares the machine's load with its yardstick. */
function interleaved(measures, n = RUNS) {
  const runs = measures.map(() => []);
  for (let i = 0; i < n; i++) measures.forEach((m, k) => runs[k].push(m()));
  return runs.map(summarise);
}

/** Median wall and CPU time, highest peak RSS (with what that run's peak was made of), the CPU range, and the last run's details. */
function summarise(ms) {
  const cpus = ms.map((m) => m.cpuMs);
  const highest = ms.reduce((a, m) => (m.maxRssMb > a.maxRssMb ? m : a));
  return { ...ms.at(-1), ms: median(ms.map((m) => m.ms)), cpuMs: median(cpus), cpuMin: Math.min(...cpus), cpuMax: Math.max(...cpus), maxRssMb: highest.maxRssMb, atPeak: highest.atPeak, runs: ms.length };
}

function show(name, m, base) {
  const rate = m.rows ? `  ${Math.round(m.rows / (m.ms / 1000)).toLocaleString('en')} rows/s` : '';
  const rel = base ? `  ${(m.ms / base.ms).toFixed(2)}× wall, ${(m.cpuMs / base.cpuMs).toFixed(2)}× CPU of the yardstick` : '';
  const spread = m.runs > 1 ? ` [${(m.cpuMin / 1000).toFixed(2)}–${(m.cpuMax / 1000).toFixed(2)}]` : '';
  say(`  ${name.padEnd(26)} wall ${(m.ms / 1000).toFixed(2).padStart(7)} s  CPU ${(m.cpuMs / 1000).toFixed(2).padStart(7)} s${spread}  peak RSS ${m.maxRssMb.toFixed(0).padStart(4)} MB${rate}${rel}`);
}

const times = (m) => ({ wallMs: Math.round(m.ms), cpuMs: Math.round(m.cpuMs), runs: m.runs });
const mb = (bytes) => Math.round((bytes / 1e6) * 10) / 10;
const label = (n) => (n >= 1e6 ? `${n / 1e6}M` : `${n / 1e3}k`);

async function readPart(dir) {
  const csv = join(dir, 'export.csv');
  await writeCsv(csv, CSV_ROWS);
  say(`read: ${CSV_ROWS.toLocaleString('en')}-row CSV, ${mb((await stat(csv)).size)} MB`);
  const [bare, full] = interleaved([() => readMeasure('bare-csv', csv), () => readMeasure('full-csv', csv)]);
  show('bare csv-parse', bare);
  show('read (decode, parse, map)', full, bare);
  show('… one record at a time', readMeasure('full-csv-records', csv), bare);
  show('… A14-style mapping', readMeasure('full-csv-light', csv), bare);
  figure('read 1M CSV, CPU / bare csv-parse', full.cpuMs / bare.cpuMs, '×', { max: 1.5 }, times(full));
  figure('read 1M CSV, peak RSS', full.maxRssMb, 'MB', { max: 200 });
}

async function xlsxPart(dir) {
  const xlsx = join(dir, 'export.xlsx');
  await writeXlsx(xlsx, XLSX_ROWS);
  say(`xlsx: ${XLSX_ROWS.toLocaleString('en')} rows, ${mb((await stat(xlsx)).size)} MB`);
  const [exceljs, ours] = interleaved([() => readMeasure('exceljs-xlsx', xlsx), () => readMeasure('full-xlsx', xlsx)]);
  show('exceljs streaming reader', exceljs);
  show('read XLSX (ours)', ours, exceljs);
  figure(`read ${label(XLSX_ROWS)} XLSX, rows/s by wall clock`, ours.rows / (ours.ms / 1000), 'rows/s', { min: 100_000 }, times(ours));
  figure(`read ${label(XLSX_ROWS)} XLSX, rows/s by CPU time`, ours.rows / (ours.cpuMs / 1000), 'rows/s', { min: 100_000 }, times(ours));
  figure(`read ${label(XLSX_ROWS)} XLSX, peak RSS`, ours.maxRssMb, 'MB', { max: 200 });
  const ja = join(dir, 'export-ja.xlsx');
  await writeXlsx(ja, XLSX_ROWS, true);
  const [jam] = interleaved([() => readMeasure('full-xlsx', ja)]);
  show('… distinct Japanese names', jam, ours);
  figure(`read ${label(XLSX_ROWS)} XLSX (Japanese names), rows/s by CPU time`, jam.rows / (jam.cpuMs / 1000), 'rows/s', null, { ...times(jam), maxRssMb: Math.round(jam.maxRssMb) });
}

async function diffPart(dir) {
  const rss = {};
  for (const n of DIFF_SIZES) {
    const csv = join(dir, `diff-${n}.csv`);
    const db = join(dir, `diff-${n}.db`);
    await writeCsv(csv, n);
    const t = Date.now();
    child(node(here('diff.bench.mjs'), '--seed', csv, db));
    say(`diff: ${label(n)}-row export (${mb((await stat(csv)).size)} MB) against a ${label(n)}-record snapshot, 1% changed (seeded in ${((Date.now() - t) / 1000).toFixed(0)} s)`);
    // Issue 13: the seeded database taken back to schema 14 and opened, so that migration 15 fills its tallies.
    const mig = child(node(here('diff.bench.mjs'), '--migrate', db));
    say(`  open at schema 14 (migration 15 fills the tallies) wall ${(mig.ms / 1000).toFixed(2)} s  CPU ${(mig.cpuMs / 1000).toFixed(2)} s  peak RSS ${mig.maxRssMb.toFixed(0)} MB; opened again, migrated: wall ${(mig.openMs / 1000).toFixed(2)} s  CPU ${(mig.openCpuMs / 1000).toFixed(2)} s`);
    figure(`migration 15 fill of ${label(n)} records, CPU beyond an open`, (mig.cpuMs - mig.openCpuMs) / 1000, 's', null, { fillWallMs: Math.round(mig.ms - mig.openMs), wallMs: Math.round(mig.ms), cpuMs: Math.round(mig.cpuMs), openWallMs: Math.round(mig.openMs), openCpuMs: Math.round(mig.openCpuMs), fillCpuMs: Math.round(mig.cpuMs - mig.openCpuMs), maxRssMb: Math.round(mig.maxRssMb) });
    // Issue 18's unchanged rows: the previous export (the snapshot's) read and its rows kept and stamped, as a sync that published it leaves them.
    const prev = join(dir, `prev-${n}.csv`);
    const kept = join(dir, `kept-${n}`);
    await writePreviousCsv(prev, n);
    await mkdir(kept, { recursive: true });
    child(node(here('diff.bench.mjs'), '--keep', prev, db, kept));
    // What the kept rows cost in the state dir (README, *How a sync decides*): the previous export's rows, beside state.db.
    const keptBytes = (await stat(join(kept, 'kept-rows'))).size;
    const exportBytes = (await stat(prev)).size;
    say(`  kept rows of the previous export: ${mb(keptBytes)} MB in the state dir (the export ${mb(exportBytes)} MB)`);
    figure(`kept rows of a ${label(n)}-row export, disk`, keptBytes / 1e6, 'MB', null, { exportBytes, keptBytes });
    await rm(prev, { force: true });
    // The 3M export once (each run takes minutes).
    const [bare, diff, unchanged] = interleaved(
      [() => readMeasure('bare-csv', csv), () => child(node(here('diff.bench.mjs'), '--measure', csv, db)), () => child(node(here('diff.bench.mjs'), '--measure-kept', csv, db, kept))],
      n >= 3e6 ? 1 : RUNS,
    );
    show('bare csv-parse', bare);
    // Which read a sync takes by default (policy unchanged_rows): the figure a shop sees.
    const { defaultPolicy } = await import(new URL('config/policy.js', dist));
    const byDefault = defaultPolicy().unchanged_rows ? 'unchanged rows' : 'full';
    say(`  the default policy (unchanged_rows ${defaultPolicy().unchanged_rows}) takes the ${byDefault} read below; the other is policy unchanged_rows ${!defaultPolicy().unchanged_rows}`);
    show(`read + diff + plan (full read${byDefault === 'full' ? ', the default' : ''})`, diff, bare);
    say(`    read ${(diff.readMs / 1000).toFixed(2)} s (CPU ${(diff.readCpuMs / 1000).toFixed(2)} s), diff ${(diff.diffMs / 1000).toFixed(2)} s (CPU ${(diff.diffCpuMs / 1000).toFixed(2)} s), plan ${(diff.planMs / 1000).toFixed(2)} s; ${diff.counts.changes} changes, path ${diff.path}`);
    const detail = { ...times(diff), bareWallMs: Math.round(bare.ms), bareCpuMs: Math.round(bare.cpuMs), readMs: Math.round(diff.readMs), diffMs: Math.round(diff.diffMs), planMs: Math.round(diff.planMs), readCpuMs: Math.round(diff.readCpuMs), diffCpuMs: Math.round(diff.diffCpuMs) };
    figure(`read+diff+plan ${label(n)}, CPU / bare csv-parse`, diff.cpuMs / bare.cpuMs, '×', { max: 2 }, detail);
    figure(`read+diff+plan ${label(n)}, wall / bare csv-parse`, diff.ms / bare.ms, '×', { max: 2 }, detail);
    const p = diff.atPeak;
    if (p) say(`    sampled peak in ${p.stage}: RSS ${p.rss} MB = anon ${p.anon} + file-backed ${p.file} + shmem ${p.shmem}; V8 heap used ${p.heapUsed} of ${p.heapTotal} (old ${p.oldSpace}, new ${p.newSpace}), external ${p.external}`);
    figure(`read+diff+plan ${label(n)}, peak RSS`, diff.maxRssMb, 'MB', { max: 256 }, p ? { atPeak: p } : {});
    rss[n] = diff.maxRssMb;
    show(`… unchanged rows kept${byDefault === 'full' ? '' : ' (the default)'}`, unchanged, bare);
    say(`    ${unchanged.kept.differing} rows differing from the kept export's, path ${unchanged.kept.path}${unchanged.kept.reason ? ` (${unchanged.kept.reason})` : ''}; ${unchanged.counts.changes} changes; load average ${unchanged.loadAvg1.toFixed(1)}`);
    const keptDetail = { ...times(unchanged), bareCpuMs: Math.round(bare.cpuMs), path: unchanged.kept.path, loadAvg1: unchanged.loadAvg1 };
    figure(`read+diff+plan ${label(n)} through unchanged rows, CPU / bare csv-parse`, unchanged.cpuMs / bare.cpuMs, '×', { max: 2 }, keptDetail);
    figure(`read+diff+plan ${label(n)} through unchanged rows, wall / bare csv-parse`, unchanged.ms / bare.ms, '×', { max: 2 }, keptDetail);
    figure(`read+diff+plan ${label(n)} through unchanged rows, peak RSS`, unchanged.maxRssMb, 'MB', { max: 256 });
    await rm(kept, { recursive: true, force: true });
    await rm(db, { force: true });
    await rm(`${db}-wal`, { force: true });
    await rm(`${db}-shm`, { force: true });
    await rm(csv, { force: true });
  }
  if (rss[1e6] && rss[3e6]) figure('read+diff+plan peak RSS, 3M / 1M', rss[3e6] / rss[1e6], '×', { max: 1.1 });
}

/** An admin request to the emulator; once more when a kept-alive connection the emulator closed meanwhile fails it. */
async function admin(url, init) {
  try {
    return await fetch(url, init);
  } catch {
    return fetch(url, init);
  }
}

/** A sync in a child process against an emulator in another; returns its measurement and the server's view of its requests. */
async function syncAgainst(emu, dir, file, mappingName) {
  const url = emu.info.url;
  await admin(`${url}/__emulator/requests`, { method: 'DELETE' });
  const m = child(node(here('sync.bench.mjs'), '--sync', url, dir, file, mappingName), { env: { ...process.env, BENCH_KEY: emu.info.key } });
  const { requests } = await (await admin(`${url}/__emulator/requests`)).json();
  const big = requests.filter((r) => (r.method === 'PUT' && r.path.endsWith('/records')) || (r.method === 'POST' && r.path.endsWith('/imports')));
  return { ...m, requestBytes: big.map((r) => r.bodyBytes ?? null), requestCount: requests.length };
}

function showSync(name, m, bare) {
  show(name, m, bare);
  const p = m.phases;
  say(`    ${m.summary.result} by ${m.summary.path}: +${m.summary.adds} ~${m.summary.changes} -${m.summary.deletes}, ${m.requestCount} requests; body as the server read it: ${m.requestBytes.map((b) => `${mb(b)} MB`).join(', ') || 'none'}`);
  // A sync that did not publish says why: its figures are not those of a sync that did.
  if (m.summary.result !== 'published' && m.summary.result !== 'unchanged') say(`    ${m.summary.code ?? ''}: ${m.summary.message ?? ''}`);
  say(`    where the time went (s): ${Object.entries(p).filter(([k]) => !['sendRequestMs', 'polls'].includes(k)).map(([k, v]) => `${k} ${(v / 1000).toFixed(2)}`).join(', ')}`);
  if (m.phasesCpu) say(`    where the CPU went (s): ${Object.entries(m.phasesCpu).map(([k, v]) => `${k} ${(v / 1000).toFixed(2)}`).join(', ')}`);
  say(`    peak at ${(m.peak.atMs / 1000).toFixed(1)} s (after ${m.peak.after ?? 'start'}): heap ${m.peak.heapMb} of ${m.peak.heapTotalMb} MB, buffers ${m.peak.buffersMb} MB; RSS at start ${m.startRssMb} MB`);
}

async function squarePart(dir) {
  const first = join(dir, 'square-items.csv');
  const next = join(dir, 'square-items-2.csv');
  await writeSquare(first, SQUARE_ROWS);
  await writeSquare(next, SQUARE_ROWS, 3);
  say(`square: ${SQUARE_ROWS.toLocaleString('en')}-row Square item export, 47 columns, ${mb((await stat(first)).size)} MB; the emulator in its own process`);
  const emu = await startChild(node(here('sync.bench.mjs'), '--emulator'));
  try {
    const state = join(dir, 'square-state');
    const [bare] = interleaved([() => readMeasure('bare-csv', first)]);
    show('bare csv-parse', bare);
    const a = await syncAgainst(emu, state, first, 'SQUARE_MAPPING');
    showSync('first sync', a, bare);
    const b = await syncAgainst(emu, state, next, 'SQUARE_MAPPING');
    showSync('sync, 1% of stocks changed', b, bare);
    for (const [what, m] of [['first sync', a], ['1% changed', b]]) {
      const detail = { ...times(m), bareWallMs: Math.round(bare.ms), bareCpuMs: Math.round(bare.cpuMs), phasesMs: m.phases, phasesCpuMs: m.phasesCpu, requestBytes: m.requestBytes };
      figure(`Square ${label(SQUARE_ROWS)} ${what}, wall / bare csv-parse`, m.ms / bare.ms, '×', { max: 3 }, detail);
      figure(`Square ${label(SQUARE_ROWS)} ${what}, CPU / bare csv-parse`, m.cpuMs / bare.cpuMs, '×', { max: 3 }, detail);
      figure(`Square ${label(SQUARE_ROWS)} ${what}, peak RSS`, m.maxRssMb, 'MB', { max: 200 });
    }
  } finally {
    await stopChild(emu.proc);
  }
}

async function firstPart(dir) {
  const csv = join(dir, 'first.csv');
  await writeCsv(csv, FIRST_ROWS);
  say(`first: the first sync of a ${label(FIRST_ROWS)}-row export (${mb((await stat(csv)).size)} MB) into an empty dataset; the emulator in its own process`);
  for (const [path, mapping] of [['PUT /records', 'MAPPING'], ['upload', 'IMPORT_MAPPING']]) {
    const emu = await startChild(node(here('sync.bench.mjs'), '--emulator'));
    try {
      const m = await syncAgainst(emu, join(dir, `first-${mapping}`), csv, mapping);
      showSync(`first sync, ${path}`, m);
      const detail = { ...times(m), phasesMs: m.phases, phasesCpuMs: m.phasesCpu, requestBytes: m.requestBytes, path: m.summary.path, result: m.summary.result };
      figure(`first sync ${label(FIRST_ROWS)} by ${path}, peak RSS`, m.maxRssMb, 'MB', { max: 300 }, detail);
      figure(`first sync ${label(FIRST_ROWS)} by ${path}, wall time`, m.ms / 1000, 's', null, detail);
      figure(`first sync ${label(FIRST_ROWS)} by ${path}, request body (server's view)`, mb(m.requestBytes[0] ?? 0), 'MB', null, { path: m.summary.path });
    } finally {
      await stopChild(emu.proc);
    }
  }
}

async function idlePart(dir) {
  const m = child([here('idle.bench.mjs'), dir], { env: { ...process.env, BENCH_NODE_FLAGS: NODE_FLAGS.join(' ') } });
  const s = (ms) => (ms / 1000).toFixed(ms < 10_000 ? 1 : 0);
  say(`idle: a daemon with three datasets (watched folders, schedules, health listener); daemon.started ${s(m.startMs)} s after the spawn, /healthz ${s(m.healthMs)} s`);
  say(`    RSS a second apart over ${s(m.idleMs)} s of idle time from ${s(m.healthMs + m.settleMs)} s after the spawn (MB): ${m.idle.rssSeries.join(' ')}`);
  // The target is of the highest RSS over the idle window: the daemon stays under it at every second of its idle time.
  figure('idle daemon, RSS peak over the idle window', m.idle.peakRssMb, 'MB', { max: 80 }, { heapMb: m.heapMb, rssSeries: m.idle.rssSeries });
  figure('idle daemon, RSS settled (end of the idle window)', m.idle.settledRssMb, 'MB', { max: 80 });
  figure('idle daemon, CPU per idle minute', m.idle.cpuPerMinuteMs / 1000, 's', { max: 0.5 }, { idleMs: m.idleMs });
  figure('idle daemon, peak RSS since the spawn (start-up included)', m.hwmAtIdleMb, 'MB', null);
  figure('idle daemon, start-up to daemon.started', m.startMs / 1000, 's', null, { healthMs: m.healthMs });
  figure('idle daemon, exceljs loaded', m.exceljsLoaded ? 1 : 0, 'yes/no', { max: 0 });
  const a = m.afterSync;
  say(`    after one ${m.syncRows.toLocaleString('en')}-row export synced in each dataset (${s(a.syncMs)} s), the same window (MB): ${a.rssSeries.join(' ')}`);
  figure('idle daemon after a sync per dataset, RSS peak over the idle window', a.peakRssMb, 'MB', null, { rssSeries: a.rssSeries });
  figure('idle daemon after a sync per dataset, RSS settled', a.settledRssMb, 'MB', null);
  figure('idle daemon after a sync per dataset, CPU per idle minute', a.cpuPerMinuteMs / 1000, 's', { max: 0.5 });
  figure('idle daemon after a sync per dataset, peak RSS since the spawn', m.hwmMb, 'MB', null);
}

async function historyPart(dir) {
  const m = child(node(here('history.bench.mjs'), dir));
  say(`history: ${m.records.toLocaleString('en')} records, ${m.versions.toLocaleString('en')} versions (${m.changes.toLocaleString('en')} record changes) written through confirm in ${(m.simulateMs / 1000).toFixed(0)} s (CPU ${(m.simulateCpuMs / 1000).toFixed(0)} s)`);
  say(`    history ${m.historyMb.toFixed(1)} MB in ${m.chunks.toLocaleString('en')} chunks; why median ${m.whyMedianMs.toFixed(2)} ms, p95 ${m.whyP95Ms.toFixed(2)} ms, max ${m.whyMaxMs.toFixed(2)} ms`);
  const detail = { versions: m.versions, changes: m.changes, historyMb: Math.round(m.historyMb), whyMedianMs: m.whyMedianMs, whyMaxMs: m.whyMaxMs };
  figure('history 100k × 30 days, state database size', m.dbMb, 'MB', { max: 200 }, detail);
  figure('history 100k × 30 days, why latency (p95 of 500)', m.whyP95Ms, 'ms', { max: 50 }, detail);
  figure('history 100k × 30 days, state a day ago worked out', m.restoreStateMs / 1000, 's', null, { records: m.restoreRecords });
  figure('history 100k × 30 days, why latency (median of 500)', m.whyMedianMs, 'ms', null);
  // The 8,640 confirms through the real path (snapshot and history in one transaction each), so that the bench can be run at all.
  figure('history 100k × 30 days, simulated through confirm', m.simulateMs / 1000, 's', { max: 600 }, { cpuS: Math.round(m.simulateCpuMs / 1000), versions: m.versions });
  figure('history 100k × 30 days, peak RSS', m.maxRssMb, 'MB', null);
}

async function feedsPart(dir) {
  // (a) One stock file of every tenth record against a snapshot of all of them: the merge stage's cost.
  const listed = Math.round(FEED_RECORDS / 10);
  const work = join(dir, 'feeds');
  await mkdir(work, { recursive: true });
  const { stockCsv } = child(node(here('feeds.bench.mjs'), '--seed', work, String(FEED_RECORDS), String(listed)));
  say(`feeds: a stock-only file of ${listed.toLocaleString('en')} records (${mb((await stat(stockCsv)).size)} MB) of a ${label(FEED_RECORDS)}-record dataset (update feed beside a full catalogue)`);
  // Each measure process does the work twice: cold (the first, in a fresh process: the target's figure, a sync after
  // a start) and warm (the same again in that process, as a long-running daemon pays it once its code is optimised).
  const warmRuns = [];
  const measure = () => {
    const m = child(node(here('feeds.bench.mjs'), '--measure', work));
    warmRuns.push({ ...m.warm, maxRssMb: m.maxRssMb });
    return m;
  };
  const [bare, upd] = interleaved([() => readMeasure('bare-csv', stockCsv), measure]);
  const warm = summarise(warmRuns);
  show('bare csv-parse', bare);
  show('read+merge+diff+plan cold', upd, bare);
  show('… warm (same process)', warm, bare);
  const stages = (m) => {
    const cpu = m.cpuStagesMs;
    return `read ${(m.readMs / 1000).toFixed(2)} s (CPU ${(cpu.read / 1000).toFixed(2)}), merge ${(m.mergeMs / 1000).toFixed(2)} s (${(cpu.merge / 1000).toFixed(2)}), diff ${(m.diffMs / 1000).toFixed(2)} s (${(cpu.diff / 1000).toFixed(2)}), plan ${(m.planMs / 1000).toFixed(2)} s`;
  };
  say(`    cold: ${stages(upd)}; ${upd.counts.changes} changes, path ${upd.path}, merged ${upd.merge === 'indexed' ? 'by index (the listed records only)' : 'by a merge-join of the whole snapshot'}`);
  say(`    warm: ${stages(warm)}`);
  // The machine may be shared: wall times include waiting for a core, the load says how much.
  say(`    load average (1 min) at the last run: ${upd.loadAvg1.toFixed(2)} on ${availableParallelism()} cores`);
  const detailOf = (m) => ({ ...times(m), cpuMinMs: Math.round(m.cpuMin), cpuMaxMs: Math.round(m.cpuMax), bareWallMs: Math.round(bare.ms), bareCpuMs: Math.round(bare.cpuMs), readMs: Math.round(m.readMs), mergeMs: Math.round(m.mergeMs), diffMs: Math.round(m.diffMs), planMs: Math.round(m.planMs), path: m.path, merge: m.merge, cpuStagesMs: m.cpuStagesMs, loadAvg1: m.loadAvg1 });
  const what = `stock update ${label(listed)} of ${label(FEED_RECORDS)}, read+merge+diff+plan`;
  // Cold, the target's figure (named as before this measured a warm run too, so that figure files compare).
  figure(`${what}, wall time`, upd.ms / 1000, 's', { max: 1 }, detailOf(upd));
  figure(`${what}, CPU time`, upd.cpuMs / 1000, 's', { max: 1 }, detailOf(upd));
  figure(`${what}, warm, wall time`, warm.ms / 1000, 's', { max: 1 }, detailOf(warm));
  figure(`${what}, warm, CPU time`, warm.cpuMs / 1000, 's', { max: 1 }, detailOf(warm));
  figure(`${what}, bare csv-parse of the same file`, bare.ms / 1000, 's', null, { wallMs: Math.round(bare.ms), cpuMs: Math.round(bare.cpuMs) });
  figure(`${what}, peak RSS`, upd.maxRssMb, 'MB', null);
  await rm(work, { recursive: true, force: true });

  // (b) The steady state: a stock file every 5 minutes, 2% of the quantities changed, the emulator's clock injected.
  const m = child(node(here('feeds.bench.mjs'), '--steady', join(dir, 'feeds-steady'), String(FEED_RECORDS), '0.02', String(FEED_CYCLES)));
  const paths = [...new Set(m.cycles.map((c) => c.path))];
  say(`feeds: a stock file every 5 minutes on a ${label(FEED_RECORDS)}-record dataset, ${m.changedPerCycle.toLocaleString('en')} quantities changed each time (2%), ${m.cycles.length} cycles = ${m.simulatedMinutes} simulated minutes`);
  say(`    the planner's choice: ${paths.join(', ')} (first cycle: ${m.cycles[0].reason})`);
  say(`    per cycle (path, records changed, requests, simulated time, CPU of connector and emulator together): ${m.cycles.map((c) => `${c.path} ${c.changes}~ ${c.requests} req ${(c.simulatedMs / 1000).toFixed(0)} s CPU ${(c.cpuMs / 1000).toFixed(1)} s`).join('; ')}`);
  say(`    ${m.requests} requests: ${m.perMinuteAverage.toFixed(1)} a minute on average, at most ${m.maxInAnyMinute} in any 60 s; rate_per_minute ${m.ratePerMinute}, the service's limit (A24) ${m.serverLimitPerMinute}; ${m.rateLimited} answered 429`);
  const cpus = m.cycles.map((c) => c.cpuMs);
  const sdetail = { cycles: m.cycles.length, paths, requests: m.requests, ratePerMinute: m.ratePerMinute, cycleCpuMs: Math.round(median(cpus)), cycleWallMs: Math.round(median(m.cycles.map((c) => c.wallMs))) };
  const steady = `stock every 5 min, ${label(FEED_RECORDS)} records, 2% churn`;
  figure(`${steady}, requests in any 60 s (A24)`, m.maxInAnyMinute, 'requests', { max: 120 }, sdetail);
  figure(`${steady}, requests a minute on average`, m.perMinuteAverage, 'requests', null, sdetail);
  figure(`${steady}, 429 answers`, m.rateLimited, 'answers', { max: 0 });
  figure(`${steady}, cycles sent by replace`, m.cycles.filter((c) => c.path === 'replace').length / m.cycles.length, 'share', null, { paths });
  figure(`${steady}, longest cycle in simulated time`, Math.max(...m.cycles.map((c) => c.simulatedMs)) / 1000, 's', { max: 300 });
  // The emulator runs in the same process (its clock is the one injected): this CPU is the connector's and the server's.
  figure(`${steady}, CPU a cycle with the emulator's (median)`, median(cpus) / 1000, 's', null, { cpuMinMs: Math.round(Math.min(...cpus)), cpuMaxMs: Math.round(Math.max(...cpus)) });
}

async function fanoutPart() {
  // Its own process: the four measurements interleaved in it (BENCH_RUNS of each), CPU medians.
  const m = child(node(here('fan-out.bench.mjs')));
  say(`fanout: a ${label(m.rows)}-row head-office file taken by ${m.takers} datasets (store 000 by its rows, 001 and 002 by their columns), ${m.runs} run(s) of each, interleaved`);
  const line = (name, x) => say(`  ${name.padEnd(44)} wall ${(x.wallMs / 1000).toFixed(2).padStart(6)} s  CPU ${(x.cpuMs / 1000).toFixed(2).padStart(6)} s [${(x.cpuMinMs / 1000).toFixed(2)}–${(x.cpuMaxMs / 1000).toFixed(2)}]${x.records ? `  records ${x.records.join(' + ')}` : ''}${x === m.bare ? '' : `  ${(x.cpuMs / m.bare.cpuMs).toFixed(2)}× CPU of the bare parse`}`);
  line('bare csv-parse', m.bare);
  line('one dataset reading it (its rows)', m.one);
  line('three datasets, each reading it (before)', m.separate);
  line('three datasets, read once for all (one pass)', m.once);
  const detail = { onceCpuMs: m.once.cpuMs, separateCpuMs: m.separate.cpuMs, bareCpuMs: m.bare.cpuMs, oneCpuMs: m.one.cpuMs, onceWallMs: m.once.wallMs, separateWallMs: m.separate.wallMs, runs: m.runs };
  const what = `fan-out ${label(m.rows)} rows to ${m.takers} datasets`;
  // Two of the three parses are shared; what is left is each dataset's own mapping and sort.
  figure(`${what}, one pass / three separate reads, CPU`, m.once.cpuMs / m.separate.cpuMs, '×', { max: 0.7 }, detail);
  figure(`${what}, one pass / three separate reads, wall`, m.once.wallMs / m.separate.wallMs, '×', null, detail);
  figure(`${what}, one pass, CPU / bare csv-parse`, m.once.cpuMs / m.bare.cpuMs, '×', null, detail);
  figure(`${what}, three separate reads, CPU / bare csv-parse`, m.separate.cpuMs / m.bare.cpuMs, '×', null, detail);
  figure(`${what}, one pass, CPU time`, m.once.cpuMs / 1000, 's', null, detail);
}

async function main() {
  const dir = await mkdtemp(join(tmpdir(), 'dc-bench-'));
  try {
    if (NODE_FLAGS.length > 0) say(`node flags (${process.env.BENCH_NODE_FLAGS !== undefined ? 'BENCH_NODE_FLAGS' : 'as shipped'}): ${NODE_FLAGS.join(' ')}`);
    say(`${RUNS} run(s) of each main figure with its yardstick, interleaved: median CPU [range], highest peak RSS`);
    const parts = { read: readPart, xlsx: xlsxPart, diff: diffPart, square: squarePart, first: firstPart, idle: idlePart, history: historyPart, feeds: feedsPart, fanout: fanoutPart };
    for (const [name, part] of Object.entries(parts)) {
      if (!ONLY.has(name)) continue;
      try {
        await part(dir);
      } catch (err) {
        // One part failing does not lose the others' figures; it is a figure of its own.
        say(`${name}: failed: ${err instanceof Error ? err.message : String(err)}`);
        figure(`${name} part ran`, 0, 'yes/no', { min: 1 });
      }
    }
    summary();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === '--child') await readChild(process.argv[3], process.argv[4]);
else await main();
