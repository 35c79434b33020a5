// Issue 13's fan-out: what reading a shared export costs its three taking datasets, read once for all of them
// (readSources: one decode and parse, each taker's rows filter, mapping and sort on disk, as the fan-out does)
// against each taker reading it itself (readSource three times, as the fan-out did before), beside a bare
// csv-parse of the same file and one taker's read alone. The file: BENCH_FANOUT_ROWS (100,000) rows, 10 stores
// (a Store column) and a stock column per store for 3 of them; store 000 takes its rows, 001 and 002 their columns.
// The measurements are interleaved, BENCH_RUNS (3) of each, so that each shares the machine's load. Run after a build:
//   node --expose-gc test/bench/fan-out.bench.mjs    one JSON line per figure (median), then one with all of them
// `npm run bench` runs it as its part `fanout` (BENCH_ONLY=fanout), with targets and verdicts.
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse';

const dist = new URL('../../dist/', import.meta.url);
const { readSource, readSources } = await import(new URL('sync/executor/source-read.js', dist).href);
const { configSchema } = await import(new URL('config/schema.js', dist).href);
const { feedView, readerMapping } = await import(new URL('feeds/view.js', dist).href);

const ROWS = Number(process.env.BENCH_FANOUT_ROWS ?? 100_000);
const RUNS = Math.max(1, Number(process.env.BENCH_RUNS ?? 3));
const dir = await mkdtemp(join(tmpdir(), 'dc-bench-fanout-'));
const file = join(dir, 'stock.csv');
const lines = ['SKU,Name,Store,Qty,Stock_001,Stock_002,Stock_003'];
for (let i = 0; i < ROWS; i++) lines.push(`S${String(i).padStart(7, '0')},Item ${i},${String(i % 10).padStart(3, '0')},${i % 97},${i % 7},${i % 11},${i % 13}`);
await writeFile(file, `${lines.join('\n')}\n`);

// Three takers as a configuration gives them: store 000 by its rows, 001 and 002 by their columns.
const feed = (extra, stock) => ({ role: 'full', from: 'ho', ...extra, mapping: { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'SKU', 'attributes.stock': { column: stock, transforms: ['integer'] } } } });
const api = { base_url: 'http://127.0.0.1:1', key: { env: 'K' } };
const config = configSchema.parse({
  exports: { ho: { watch: { path: dir }, source: { type: 'csv' } } },
  datasets: {
    s0: { api, feeds: { stock: feed({ rows: { column: 'Store', equals: '000' } }, 'Qty') } },
    s1: { api, feeds: { stock: feed({}, 'Stock_001') } },
    s2: { api, feeds: { stock: feed({}, 'Stock_002') } },
  },
});
const takers = Object.entries(config.datasets).map(([name, ds]) => feedView({ ...ds, name }, 'stock'));
const source = takers[0].source;

async function timed(fn) {
  global.gc?.();
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  const out = await fn();
  const c = process.cpuUsage(c0);
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, cpuMs: (c.user + c.system) / 1000, out };
}
let seq = 0;
const work = async () => {
  const d = join(dir, `w-${++seq}`);
  await mkdir(d);
  return d;
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const refused = (reads) => reads.find((r) => r.rejected)?.rejected;

const measures = {
  bare: async () => {
    let n = 0;
    for await (const rec of createReadStream(file, { highWaterMark: 256 * 1024 }).pipe(parse({ relax_column_count: true }))) n += rec.length > 0 ? 1 : 0;
    return n;
  },
  one: async () => [await readSource(file, source, readerMapping(takers[0]), await work())],
  separate: async () => {
    const reads = [];
    for (const ds of takers) reads.push(await readSource(file, ds.source, readerMapping(ds), await work()));
    return reads;
  },
  once: async () => {
    const dirs = [];
    for (let i = 0; i < takers.length; i++) dirs.push(await work());
    return readSources(file, source, takers.map((ds, i) => ({ mapping: readerMapping(ds), workDir: dirs[i] })));
  },
};
const runs = Object.fromEntries(Object.keys(measures).map((k) => [k, []]));
for (let r = 0; r < RUNS; r++) {
  for (const [k, fn] of Object.entries(measures)) {
    const m = await timed(fn);
    if (k !== 'bare' && refused(m.out)) throw new Error(`${k}: ${refused(m.out).message}`);
    runs[k].push(m);
  }
  await Promise.all(Array.from({ length: seq }, (_, i) => rm(join(dir, `w-${i + 1}`), { recursive: true, force: true })));
  seq = 0;
}
const names = {
  bare: 'bare csv-parse of the file',
  one: 'read for one taker (store 000 by its rows)',
  separate: 'three takers, each reading the file itself (the fan-out before)',
  once: 'three takers, the file read once for all of them (the fan-out)',
};
const all = {};
for (const [k, ms] of Object.entries(runs)) {
  const out = ms.at(-1).out;
  all[k] = { wallMs: Math.round(median(ms.map((x) => x.ms))), cpuMs: Math.round(median(ms.map((x) => x.cpuMs))), cpuMinMs: Math.round(Math.min(...ms.map((x) => x.cpuMs))), cpuMaxMs: Math.round(Math.max(...ms.map((x) => x.cpuMs))), ...(k === 'bare' ? {} : { records: out.map((s) => s.records) }) };
  console.log(JSON.stringify({ figure: names[k], rows: ROWS, runs: RUNS, load: loadavg()[0].toFixed(2), ...all[k] }));
}
// The same records either way (a shared read that lost some would look cheap).
if (all.once.records.join() !== all.separate.records.join()) throw new Error(`records differ: once ${all.once.records} vs separate ${all.separate.records}`);
console.log(JSON.stringify({ rows: ROWS, runs: RUNS, takers: takers.length, ...all }));
await rm(dir, { recursive: true, force: true });
