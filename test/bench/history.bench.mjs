// The history of issue 14: a 100,000-record dataset after 30 simulated days of 5-minute stock updates at 1%
// churn, every version confirmed through the snapshot store as a sync confirms it (its history rows written in
// the same transaction), then pruned with the default retention. Run by run.mjs in a process of its own:
//   node history.bench.mjs <dir>     prints one JSON line: database size, history bytes, why latency, restore time
// BENCH_HISTORY_RECORDS (100000), BENCH_HISTORY_DAYS (30), BENCH_HISTORY_EVERY_MIN (5), BENCH_HISTORY_CHURN (0.01).
import { statSync } from 'node:fs';
import { join } from 'node:path';

const dist = new URL('../../dist/', import.meta.url);
const { openStateDb } = await import(new URL('snapshot/db.js', dist).href);
const { why } = await import(new URL('history/why.js', dist).href);
const { HistoryReader } = await import(new URL('history/reader.js', dist).href);
const { pruneHistory } = await import(new URL('history/prune.js', dist).href);
const { historyConfigSchema } = await import(new URL('config/history.js', dist).href);

const RECORDS = Number(process.env.BENCH_HISTORY_RECORDS ?? 100_000);
const DAYS = Number(process.env.BENCH_HISTORY_DAYS ?? 30);
const EVERY_MS = Number(process.env.BENCH_HISTORY_EVERY_MIN ?? 5) * 60_000;
const CHURN = Number(process.env.BENCH_HISTORY_CHURN ?? 0.01);
const DS = 'bench';

const dir = process.argv[2];
const path = join(dir, 'history.db');
let now = Date.UTC(2026, 0, 1);
const db = openStateDb(path, { clock: { now: () => now, sleep: async () => undefined } });
const store = db.snapshot(DS);
// The simulated days are written without fsync (what is measured is the size and the reads, not the disk's flushes).
db.conn.pragma('synchronous = OFF');
// A fixed pseudo-random sequence (mulberry32), so that runs compare.
let seed = 14;
const rand = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const id = (i) => `SKU-${String(i).padStart(6, '0')}`;
const stock = new Int32Array(RECORDS).map(() => Math.floor(rand() * 200));
const rec = (i) => ({
  record_id: id(i),
  display_name: `Item ${i} ブルー M`,
  api_value: id(i),
  aliases: [],
  attributes: { stock: stock[i], price: 100 + (i % 97) * 10, category: `cat-${i % 40}` },
  active: true,
});
const fileHash = (v) => `${v.toString(16).padStart(8, '0')}${'0'.repeat(56)}`;

const t0 = Date.now();
const c0 = process.cpuUsage();
let version = 1;
store.confirm({
  activeVersion: version,
  upsertTexts: (function* () {
    for (let i = 0; i < RECORDS; i++) yield { record_id: id(i), json: JSON.stringify(rec(i)), line: i + 2 };
  })(),
  provenance: { kind: 'sync', planId: 'plan-first', file: '/srv/pos/stock.csv', fileHash: fileHash(version) },
});
const versions = Math.round((DAYS * 86_400_000) / EVERY_MS);
const perVersion = Math.max(1, Math.round(RECORDS * CHURN));
const PER_DAY = Math.max(1, Math.round(86_400_000 / EVERY_MS));
let changes = 0;
for (let v = 0; v < versions; v++) {
  now += EVERY_MS;
  version++;
  const ups = [];
  for (let k = 0; k < perVersion; k++) {
    const i = Math.floor(rand() * RECORDS);
    stock[i] = Math.max(0, stock[i] + Math.floor(rand() * 21) - 10);
    ups.push({ record_id: id(i), json: JSON.stringify(rec(i)), line: i + 2 });
  }
  ups.sort((a, b) => (a.record_id < b.record_id ? -1 : 1));
  store.confirm({ activeVersion: version, upsertTexts: ups, provenance: { kind: 'sync', planId: `plan-${v}`, file: '/srv/pos/stock.csv', fileHash: fileHash(version) } });
  changes += ups.length;
  // A line a simulated day on stderr, so that a long run shows where it is (run.mjs shows stderr only on failure).
  if ((v + 1) % PER_DAY === 0) process.stderr.write(`history bench: day ${(v + 1) / PER_DAY} of ${DAYS}, ${v + 1} versions, ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
}
const simulateMs = Date.now() - t0;
const simulateCpu = process.cpuUsage(c0);

const pruned = pruneHistory(db.conn, DS, historyConfigSchema.parse({}), now);
db.conn.pragma('wal_checkpoint(TRUNCATE)');
const size = () => statSync(path).size + (statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0);
const dbBytes = size();
const historyBytes = db.conn.prepare('SELECT sum(length(data)) FROM history_records').pluck().get();
const chunks = db.conn.prepare('SELECT count(*) FROM history_records').pluck().get();

// why of 500 records picked at random, each answered from the state db alone (as the command does, without its start-up).
const lat = [];
for (let k = 0; k < 500; k++) {
  const i = Math.floor(rand() * RECORDS);
  const s = process.hrtime.bigint();
  const r = why(db.conn, DS, id(i));
  lat.push(Number(process.hrtime.bigint() - s) / 1e6);
  if (r.status !== 'published') throw new Error(`why ${id(i)}: ${r.status}`);
}
lat.sort((a, b) => a - b);

// The state a day ago, as restore works it out (before planning it).
const h = new HistoryReader(db.conn, DS);
const dayAgo = h.seqOf({ time: now - Math.min(86_400_000, (DAYS * 86_400_000) / 2) });
const r0 = Date.now();
let n = 0;
for (const _ of h.stateAt(dayAgo.seq)) n++;
const restoreStateMs = Date.now() - r0;
db.close();

process.stdout.write(
  `${JSON.stringify({
    records: RECORDS,
    versions: versions + 1,
    changes,
    dbMb: dbBytes / 1e6,
    historyMb: historyBytes / 1e6,
    chunks,
    pruned,
    whyMedianMs: lat[Math.floor(lat.length / 2)],
    whyP95Ms: lat[Math.floor(lat.length * 0.95)],
    whyMaxMs: lat.at(-1),
    restoreStateMs,
    restoreRecords: n,
    simulateMs,
    simulateCpuMs: (simulateCpu.user + simulateCpu.system) / 1000,
    maxRssMb: process.resourceUsage().maxRSS / 1024,
  })}\n`,
);
