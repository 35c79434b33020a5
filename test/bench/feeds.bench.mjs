// Feeds (issue 13): a stock-only update feed beside a full catalogue. Run by run.mjs, each in its own process:
//   node feeds.bench.mjs --seed <dir> <records> <listed>   a state db of <records> owned records with stock, the
//        config, and a stock file of every (records/listed)-th record with a new quantity; prints {stockCsv}
//   node feeds.bench.mjs --measure <dir>    read + merge + diff + plan of that stock file as a sync does them
//        (readSource with the feed's reader mapping, desiredOf, diffDesired, planSync), twice: the first (cold, in this
//        fresh process) and, under `warm`, the second (as a long-running daemon pays it); prints one JSON line
//   node feeds.bench.mjs --steady <dir> <records> <churn> <cycles>   the emulator in this process on an injected
//        clock (waits advance it): a stock file of every record every 5 minutes with <churn> of the quantities
//        changed, synced through the engine; prints the planner's choice per cycle and the requests per minute
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';

const dist = new URL('../../dist/', import.meta.url);
const load = (m) => import(new URL(m, dist).href);
const { loadConfig } = await load('config/load.js');
const { openStateDb } = await load('snapshot/db.js');
const { feedView, readerMapping } = await load('feeds/view.js');

const DATASET = 'bench';
const KEY = 'tbd_live_bench_feeds_key_00000000000';
const MINUTE = 60_000;
const CYCLE_MS = 5 * MINUTE;
const ms = (c) => (c.user + c.system) / 1000;

/** The feeds form as a shop writes it: the catalogue (full) and a stock file (update); JSON is YAML. */
function writeConfig(dir, url) {
  const file = join(dir, 'connector.yaml');
  writeFileSync(
    file,
    JSON.stringify({
      state_dir: join(dir, 'state'),
      datasets: {
        [DATASET]: {
          api: { base_url: url, key: { env: 'BENCH_FEEDS_KEY' } },
          feeds: {
            main: { role: 'full', source: { type: 'csv' }, mapping: { fields: { record_id: 'SKU', display_name: 'Name', api_value: 'Code' } } },
            stock: { role: 'update', source: { type: 'csv' }, mapping: { fields: { record_id: 'SKU', 'attributes.stock': { column: 'Qty', transforms: ['integer'] } } } },
          },
        },
      },
    }),
  );
  return file;
}

const id = (i) => `SKU-${String(i).padStart(7, '0')}`;
const record = (i, stock) => ({ record_id: id(i), display_name: `Item ${i}`, api_value: `code-${i}`, aliases: [], attributes: stock === undefined ? {} : { stock }, active: true });

function writeLines(file, header, n, line) {
  const out = [header];
  for (let i = 1; i <= n; i++) {
    const l = line(i);
    if (l !== null) out.push(l);
  }
  writeFileSync(file, `${out.join('\n')}\n`);
}

async function stockDataset(dir) {
  const config = await loadConfig(join(dir, 'connector.yaml'));
  return feedView(config.datasets[DATASET], 'stock');
}

if (process.argv[2] === '--seed') {
  const [dir, records, listed] = [process.argv[3], Number(process.argv[4]), Number(process.argv[5])];
  writeConfig(dir, 'http://127.0.0.1:9');
  const db = openStateDb(join(dir, 'state.db'));
  const store = db.snapshot(DATASET);
  for (let from = 1; from <= records; from += 50_000) {
    const batch = [];
    for (let i = from; i < Math.min(records + 1, from + 50_000); i++) batch.push(record(i, i % 50));
    store.confirm({ activeVersion: 1, upserts: batch });
  }
  db.close();
  const every = Math.max(1, Math.floor(records / listed));
  const stockCsv = join(dir, 'stock.csv');
  writeLines(stockCsv, 'SKU,Qty', records, (i) => (i % every === 0 ? `${id(i)},${(i % 50) + 1}` : null));
  process.stdout.write(`${JSON.stringify({ stockCsv })}\n`);
} else if (process.argv[2] === '--measure') {
  const dir = process.argv[3];
  const { readSource, planSource } = await load('sync/executor/source-read.js');
  const { desiredOf, diffDesired, diffsAsRead, planFeedOf } = await load('sync/executor/feed-desired.js');
  // BENCH_FEED_PATH=indexed|full: that merge and diff whatever the listed share (to find the crossover); unset: as a sync picks.
  const path = process.env.BENCH_FEED_PATH || undefined;
  const { planSync } = await load('sync/core/plan.js');
  const ds = await stockDataset(dir);
  const db = openStateDb(join(dir, 'state.db'));
  /** One read + merge + diff + plan of the stock file, as a sync makes them, in a scratch folder of its own. */
  const once = async () => {
    const work = mkdtempSync(join(dir, 'work-'));
    try {
      const store = db.snapshot(DATASET);
      // What desiredOf and diffDesired read of a sync's context: the snapshot, the policy, the state db (feed state), the dataset.
      const ctx = { store, policy: ds.policy, db, dataset: DATASET };
      global.gc?.();
      const t0 = performance.now();
      const c0 = process.cpuUsage();
      // As run-sync reads a feed's file (its reader mapping, no value flags: the merged records are diffed).
      const src = await readSource(join(dir, 'stock.csv'), ds.source, readerMapping(ds), work, { valueFlags: diffsAsRead(ds) });
      if (src.rejected) throw src.rejected;
      const t1 = performance.now();
      const c1 = process.cpuUsage(c0);
      const desired = desiredOf(ctx, ds, src, join(work, 'merged'), path);
      const t2 = performance.now();
      const c2 = process.cpuUsage(c0);
      const cs = await diffDesired(ctx, desired, join(work, 'changeset'));
      const t3 = performance.now();
      const c3 = process.cpuUsage(c0);
      const plan = planSync({
        dataset: DATASET,
        changeset: cs,
        snapshot: { ...store.state(), lastSource: null },
        key: { roles: ['read', 'write', 'replace', 'publish'], shown: { records: 'stages', jobs: 'stages' } },
        policy: ds.policy,
        rateBudget: { ratePerMinute: ds.api.rate_per_minute },
        source: planSource(src),
        planDir: work,
        now: Date.now(),
        feed: planFeedOf(ds, src, desired.feed),
      });
      const t4 = performance.now();
      const c = process.cpuUsage(c0);
      return {
        rows: src.rows,
        ms: t4 - t0,
        cpuMs: (c.user + c.system) / 1000,
        readMs: t1 - t0,
        mergeMs: t2 - t1,
        diffMs: t3 - t2,
        planMs: t4 - t3,
        // CPU per stage (the machine may be shared: wall times then include waiting).
        cpuStagesMs: { read: ms(c1), merge: ms(c2) - ms(c1), diff: ms(c3) - ms(c2), plan: ms(c) - ms(c3) },
        loadAvg1: loadavg()[0],
        counts: cs.counts,
        feed: desired.feed,
        path: plan.path,
        reason: plan.reason,
        merge: desired.listed ? 'indexed' : 'full',
      };
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  };
  try {
    // Cold: the first in a fresh process (a sync after a start, the target's figure); warm: the same again in this
    // process, as a long-running daemon pays it once its code is compiled and optimised.
    const cold = await once();
    const warm = await once();
    process.stdout.write(`${JSON.stringify({ ...cold, warm, maxRssMb: process.resourceUsage().maxRSS / 1024 })}\n`);
  } finally {
    db.close();
  }
} else if (process.argv[2] === '--steady') {
  const [dir, records, churn, cycles] = [process.argv[3], Number(process.argv[4]), Number(process.argv[5]), Number(process.argv[6])];
  const { startEmulator, EmulatorClock, maxInWindow } = await load('emulator/index.js');
  const { SyncEngine } = await load('sync/engine.js');
  const { DatasetClient } = await load('api/client.js');
  const { Secret } = await load('secret.js');
  const { silentLogger } = await load('log/logger.js');
  const { systemClock } = await load('clock.js');
  mkdirSync(dir, { recursive: true });
  const em = await startEmulator({ clock: new EmulatorClock({ mode: 'manual' }), maxBodyBytes: 2 ** 31 - 1 });
  // A replace job of the whole dataset takes the emulator 10 s of its clock: the connector polls it meanwhile.
  em.emulator.configure({ jobDurationMs: 10_000 });
  em.emulator.addDataset({ id: DATASET, records: Array.from({ length: records }, (_, i) => record(i + 1)) });
  em.emulator.addKey({ dataset: DATASET, key: KEY, roles: ['read', 'write', 'replace', 'publish'] });
  process.env.BENCH_FEEDS_KEY = KEY;
  const config = await loadConfig(writeConfig(dir, em.url));
  const full = config.datasets[DATASET];
  const stock = feedView(full, 'stock');
  // The injected clock: waits (rate pacing, job polls, back-off) move the emulator's clock instead of sleeping.
  const clock = { ...systemClock, now: () => em.emulator.clock.now(), sleep: async (ms) => em.emulator.clock.advance(Math.max(0, ms)) };
  mkdirSync(config.state_dir, { recursive: true });
  const db = openStateDb(join(config.state_dir, 'state.db'), { clock });
  const client = new DatasetClient({ baseUrl: full.api.base_url, datasetId: full.api.dataset_id, key: new Secret(KEY), ratePerMinute: full.api.rate_per_minute, clock, rateWindow: db.rateWindow });
  const engine = new SyncEngine({ db, logger: silentLogger(), clock, clientFor: () => client });
  const qty = new Int32Array(records + 1).map((_, i) => (i % 50) + 1);
  const changed = Math.round(records * churn);
  const sync = async (view, file) => {
    const s = await engine.sync(view, { file });
    if (s.result !== 'published' && s.result !== 'unchanged') throw new Error(`${file}: ${s.result} ${s.code} ${s.message}`);
    return s;
  };
  try {
    const catalogue = join(dir, 'catalogue.csv');
    writeLines(catalogue, 'SKU,Name,Code', records, (i) => `${id(i)},Item ${i},code-${i}`);
    await sync(full, catalogue);
    let file = join(dir, 'stock-0.csv');
    writeLines(file, 'SKU,Qty', records, (i) => `${id(i)},${qty[i]}`);
    await sync(stock, file);
    // The steady state: from here on, every request the connector sends is counted.
    em.emulator.clearRequests?.();
    const start = clock.now();
    const out = [];
    // A stride through the records coprime with their count: each cycle changes `changed` distinct records, spread over the file.
    let step = 7919;
    while (records % step === 0) step += 2;
    let pick = 0;
    for (let k = 1; k <= cycles; k++) {
      const at = start + (k - 1) * CYCLE_MS;
      if (clock.now() < at) em.emulator.clock.advance(at - clock.now());
      for (let n = 0; n < changed; n++) {
        pick = (pick + step) % records;
        qty[pick + 1] = (qty[pick + 1] % 50) + 1;
      }
      file = join(dir, `stock-${k}.csv`);
      writeLines(file, 'SKU,Qty', records, (i) => `${id(i)},${qty[i]}`);
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const s = await sync(stock, file);
      const c = process.cpuUsage(c0);
      out.push({ cycle: k, path: s.path, changes: s.changes, requests: s.requests, simulatedMs: clock.now() - at, wallMs: performance.now() - t0, cpuMs: (c.user + c.system) / 1000, reason: s.pathReason });
      rmSync(file, { force: true });
    }
    const end = Math.max(clock.now(), start + cycles * CYCLE_MS);
    const reqs = em.emulator.requests.filter((r) => r.time >= start);
    process.stdout.write(
      `${JSON.stringify({
        records,
        changedPerCycle: changed,
        cycles: out,
        requests: reqs.length,
        simulatedMinutes: (end - start) / MINUTE,
        perMinuteAverage: reqs.length / ((end - start) / MINUTE),
        maxInAnyMinute: maxInWindow(reqs),
        rateLimited: reqs.filter((r) => r.status === 429).length,
        ratePerMinute: full.api.rate_per_minute,
        serverLimitPerMinute: em.emulator.settings?.rateLimitPerMinute ?? null,
        maxRssMb: process.resourceUsage().maxRSS / 1024,
      })}\n`,
    );
  } finally {
    db.close();
    await client.close();
    await em.close();
  }
} else {
  throw new Error('usage: feeds.bench.mjs --seed <dir> <records> <listed> | --measure <dir> | --steady <dir> <records> <churn> <cycles>');
}
