// Issue 18: where the confirm of a large publish goes. A first sync's confirm (N new records, with their export
// lines, through SnapshotStore.confirm as the ledger calls it: snapshot, tallies, history and migration 17's
// generation in one transaction) on a fresh state db, then a second confirm changing 1% of them. Square-like
// records (the square bench's mapping). Medians of `runs` runs, each on a fresh state db; --profile adds the
// functions that took the most self time over all runs (an in-process CPU profile of the confirms only).
// --dist=<dir>,<dir>: the builds to compare (default this tree's dist/), run interleaved so that a shared
// machine's load falls on each alike (a copy of dist/ made before a change, beside the change's).
//   npm run build && node --expose-gc test/bench/confirm.bench.mjs [records=200000] [runs=3] [--profile] [--dist=…]
import { mkdtempSync, rmSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const N = Number(args[0] ?? 200_000);
const RUNS = Number(args[1] ?? 3);
const PROFILE = process.argv.includes('--profile');
const DISTS = (process.argv.find((a) => a.startsWith('--dist='))?.slice('--dist='.length).split(',') ?? [null]).map((d) =>
  d === null ? new URL('../../dist/', import.meta.url) : pathToFileURL(`${d.replace(/\/$/, '')}/`),
);
const builds = await Promise.all(DISTS.map(async (d) => ({ name: d.pathname, openStateDb: (await import(new URL('snapshot/db.js', d).href)).openStateDb })));

const token = (i) => ((i * 2654435761) >>> 0).toString(36).toUpperCase().padStart(8, 'Q').repeat(3);
const id = (i) => `SQ${String(i).padStart(7, '0')}`;
/** Canonical record JSON as a plan's changeset holds it (keys sorted). */
const json = (i, bump = 0) =>
  JSON.stringify({
    active: i % 7 !== 0,
    aliases: [],
    api_value: token(i),
    attributes: { category: `Category ${i % 40}`, price: (i % 90) + 10, stock_main_street: ((i * 37) % 250) + bump, stock_shibuya: (i * 11) % 120 },
    display_name: `Tee ${Math.floor(i / 3)} ${['Small', 'Medium', 'Large'][i % 3]}`,
    record_id: id(i),
  });
const provenance = (plan) => ({ kind: 'sync', planId: plan, file: '/srv/pos/square-items.csv', fileHash: 'f'.repeat(64), detail: { counts: { adds: N } } });

let session = null;
if (PROFILE) {
  session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 500 });
}
const profiles = [];

async function timed(fn) {
  global.gc?.();
  if (session) await session.post('Profiler.start');
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  fn();
  const ms = performance.now() - t0;
  const c = process.cpuUsage(c0);
  if (session) profiles.push((await session.post('Profiler.stop')).profile);
  return { ms, cpuMs: (c.user + c.system) / 1000 };
}

// The texts as the changeset holds them, made before the clock starts: the figures are of the confirm alone.
const firstTexts = Array.from({ length: N }, (_, i) => ({ record_id: id(i), json: json(i), line: i + 2 }));
const changedTexts = firstTexts.filter((_, i) => i % 100 === 0).map((t, k) => ({ ...t, json: json(k * 100, 3) }));

async function once(openStateDb) {
  const dir = mkdtempSync(join(tmpdir(), 'confirm-bench-'));
  try {
    const db = openStateDb(join(dir, 'state.db'));
    const store = db.snapshot('shop');
    const first = await timed(() =>
      store.confirm({
        activeVersion: 1,
        upsertTexts: firstTexts,
        provenance: provenance('plan-first'),
      }),
    );
    const changed = await timed(() =>
      store.confirm({
        activeVersion: 2,
        upsertTexts: changedTexts,
        provenance: provenance('plan-second'),
      }),
    );
    db.close();
    return { first, changed };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const runs = builds.map(() => []);
for (let r = 0; r < RUNS; r++) for (const [k, b] of builds.entries()) runs[k].push(await once(b.openStateDb));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [k, b] of builds.entries()) {
  if (builds.length > 1) console.log(b.name);
  for (const what of ['first', 'changed']) {
    const ms = runs[k].map((r) => r[what].ms);
    const cpu = runs[k].map((r) => r[what].cpuMs);
    const label = what === 'first' ? `first confirm of ${N.toLocaleString('en')} records` : `confirm of 1% changed (${Math.ceil(N / 100).toLocaleString('en')})`;
    console.log(`  ${label.padEnd(42)} wall median ${median(ms).toFixed(0)} ms (${ms.map((x) => x.toFixed(0)).join(', ')}), CPU median ${median(cpu).toFixed(0)} ms (${cpu.map((x) => x.toFixed(0)).join(', ')})`);
  }
}

if (session) {
  // Self time per function (name, file:line) over every profiled confirm.
  const self = new Map();
  let total = 0;
  for (const p of profiles) {
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const dt = p.timeDeltas;
    for (let k = 0; k < p.samples.length; k++) {
      const n = byId.get(p.samples[k]);
      const f = n.callFrame;
      const key = `${f.functionName || '(anonymous)'} ${f.url.split('/').slice(-2).join('/')}:${f.lineNumber + 1}`;
      self.set(key, (self.get(key) ?? 0) + dt[k]);
      total += dt[k];
    }
  }
  console.log('self time (all profiled confirms):');
  for (const [k, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${((us / total) * 100).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${k}`);
}
