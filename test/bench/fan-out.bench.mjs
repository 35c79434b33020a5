// Issue 13's fan-out: what reading a shared export once per taking dataset costs, against parsing it once.
// A head-office file of BENCH_FANOUT_ROWS (100,000) rows, 10 stores (a Store column) and a stock column per
// store for 3 of them, is read through each taker's mapping as the fan-out does (readSource: decode, parse,
// map with the taker's rows filter, sort on disk), for 3 takers one after another; beside it a bare csv-parse
// of the same file, which is the most a parse-once design could save per extra taker. Run after a build:
//   node --expose-gc test/bench/fan-out.bench.mjs       prints one JSON line per figure (median of BENCH_RUNS)
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse';

const dist = new URL('../../dist/', import.meta.url);
const { readSource } = await import(new URL('sync/executor/source-read.js', dist).href);
const { configSchema } = await import(new URL('config/schema.js', dist).href);

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
const takers = Object.values(config.datasets);

async function timed(fn) {
  global.gc?.();
  const t0 = process.hrtime.bigint();
  const c0 = process.cpuUsage();
  const out = await fn();
  const c = process.cpuUsage(c0);
  return { ms: Number(process.hrtime.bigint() - t0) / 1e6, cpuMs: (c.user + c.system) / 1000, out };
}
const work = async (name) => {
  const d = join(dir, name);
  await mkdir(d);
  return d;
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const bare = [];
const one = [];
const three = [];
for (let r = 0; r < RUNS; r++) {
  bare.push(
    await timed(async () => {
      let n = 0;
      for await (const rec of createReadStream(file, { highWaterMark: 256 * 1024 }).pipe(parse({ relax_column_count: true }))) n += rec.length > 0 ? 1 : 0;
      return n;
    }),
  );
  one.push(await timed(async () => readSource(file, takers[0].source, takers[0].mapping, await work(`w-one-${r}`))));
  three.push(
    await timed(async () => {
      const reads = [];
      for (const [i, ds] of takers.entries()) reads.push(await readSource(file, ds.source, ds.mapping, await work(`w-${r}-${i}`)));
      return reads;
    }),
  );
}
const fig = (name, runs, extra = {}) => console.log(JSON.stringify({ figure: name, rows: ROWS, wall_ms: Math.round(median(runs.map((x) => x.ms))), cpu_ms: Math.round(median(runs.map((x) => x.cpuMs))), load: loadavg()[0].toFixed(2), ...extra }));
fig('bare csv-parse (what parse-once saves per extra taker, at most)', bare);
fig('read for one taker (store 000 by its rows)', one, { records: one[0].out.records });
fig('read for three takers, one after another (the fan-out)', three, { records: three[0].out.map((s) => s.records) });
await rm(dir, { recursive: true, force: true });
