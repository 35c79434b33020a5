// Read + diff + plan of an export against a snapshot with 1% of the records changed (issue 18), as a sync
// does it: readSource (decode, parse, map, sort on disk), diffSource (merge-join with the SQLite snapshot into
// a changeset on disk), planSync. Run by run.mjs, each step in its own process so that peak RSS is its own:
//   node diff.bench.mjs --seed <export.csv> <state.db>      snapshot = the export mapped, 1% of stocks different
//   node diff.bench.mjs --measure <export.csv> <state.db>   prints one JSON line: times, CPU, peak RSS, counts, and
//     the sampled memory at the peak with its stage (mem-trace.mjs); BENCH_MEM_TRACE=<file>: every sample there
//   node diff.bench.mjs --migrate <state.db>   takes the seeded database back to schema 14 (the tables of later
//     migrations dropped), then times its opening by this build (integrity check, migration 15's fill of the
//     record tallies, 16), and an opening of the migrated file for comparison; prints one JSON line
//   node diff.bench.mjs --keep <previous.csv> <state.db> <dir>   the previous export read (nothing to publish) and its rows kept, stamped
//   node diff.bench.mjs --measure-kept <export.csv> <state.db> <dir>   --measure through the unchanged rows (src/sync/unchanged/)
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dist = new URL('../../dist/', import.meta.url);
const { openStateDb } = await import(new URL('snapshot/db.js', dist).href);
const { sourceConfigSchema } = await import(new URL('sources/config.js', dist).href);
const { mappingConfigSchema } = await import(new URL('mapping/config.js', dist).href);
const { readExport } = await import(new URL('sources/read.js', dist).href);
const { readSource, planSource } = await import(new URL('sync/executor/source-read.js', dist).href);
const { diffSource } = await import(new URL('sync/disk/diff-source.js', dist).href);
const { diffOptionsOf } = await import(new URL('sync/core/diff.js', dist).href);
const { planSync } = await import(new URL('sync/core/plan.js', dist).href);
const { policySchema } = await import(new URL('config/policy.js', dist).href);
const { readAndDiff } = await import(new URL('sync/unchanged/unchanged-diff.js', dist).href);
const { stampKept } = await import(new URL('sync/unchanged/kept-rows.js', dist).href);
const { keptDigest } = await import(new URL('sync/unchanged/kept-stamp.js', dist).href);
const { MAPPING } = await import('./exports.mjs');
const { memTrace } = await import('./mem-trace.mjs');
const { MIGRATIONS } = await import(new URL('snapshot/migrations.js', dist).href);
const { default: Database } = await import('better-sqlite3');

const [mode, file, statePath, keptDir] = process.argv.slice(2);
// 3,000,000 rows is past the default max_rows (2,000,000) and near max_file_bytes: both raised for the bench.
const source = sourceConfigSchema.parse({ type: 'csv', limits: { max_rows: 10_000_000, max_file_bytes: 2 ** 31 } });
const mapping = mappingConfigSchema.parse(MAPPING);
const policy = policySchema.parse({});

if (mode === '--seed') {
  // The published records: the export's, with every 100th record's stock one higher (so 1% differ).
  const db = openStateDb(statePath);
  const store = db.snapshot('bench');
  let n = 0;
  let batch = [];
  const flush = () => {
    store.confirm({ activeVersion: 1, upserts: batch });
    batch = [];
  };
  for await (const b of readExport(file, source, mapping).batches()) {
    for (const r of b.records) {
      if (n++ % 100 === 1) r.attributes = { ...r.attributes, stock: (r.attributes.stock ?? 0) + 1 };
      batch.push(r);
    }
    if (batch.length >= 50_000) flush();
  }
  flush();
  db.close();
  process.stdout.write(`${JSON.stringify({ seeded: n })}\n`);
} else if (mode === '--keep') {
  const db = openStateDb(statePath);
  const work = mkdtempSync(join(tmpdir(), 'dc-bench-work-'));
  try {
    const store = db.snapshot('bench');
    const r = await readAndDiff(file, source, mapping, work, { keptDir, store, policy });
    if (r.changeset.counts.adds + r.changeset.counts.changes + r.changeset.counts.deletes !== 0) throw new Error('the previous export is not the snapshot');
    stampKept(keptDir, store, store.generation(), keptDigest(source, mapping));
    process.stdout.write(`${JSON.stringify({ kept: r.read.records })}\n`);
  } finally {
    db.close();
    rmSync(work, { recursive: true, force: true });
  }
} else if (mode === '--measure' || mode === '--measure-kept') {
  const db = openStateDb(statePath);
  const work = mkdtempSync(join(tmpdir(), 'dc-bench-work-'));
  try {
    global.gc?.();
    const trace = memTrace(process.env.BENCH_MEM_TRACE);
    trace.stage('read');
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const store = db.snapshot('bench');
    let src;
    let cs;
    let t1;
    let c1;
    let kept = null;
    if (mode === '--measure-kept') {
      // Read and diff are one pass here: the read's time is all of it.
      const r = await readAndDiff(file, source, mapping, work, { keptDir, store, policy });
      if (r.read.rejected) throw r.read.rejected;
      ({ read: src, changeset: cs } = r);
      kept = { path: r.path, reason: r.reason, differing: r.differing };
      t1 = performance.now();
      c1 = process.cpuUsage(c0);
    } else {
      src = await readSource(file, source, mapping, work);
      if (src.rejected) throw src.rejected;
      t1 = performance.now();
      c1 = process.cpuUsage(c0);
      trace.stage('diff');
      // The diff options a sync takes from the default policy: value guards on (each compared record's values tallied).
      cs = await diffSource(src.sorted, store.reader(), diffOptionsOf(policy), join(work, 'changeset'));
    }
    const t2 = performance.now();
    const c2 = process.cpuUsage(c0);
    trace.stage('plan');
    const plan = planSync({
      dataset: 'bench',
      changeset: cs,
      snapshot: store.state(),
      key: { roles: ['read', 'write', 'replace', 'publish'], shown: { records: 'stages', jobs: 'stages' } },
      policy,
      rateBudget: { ratePerMinute: 100 },
      source: planSource(src),
      planDir: work,
      now: Date.now(),
    });
    const t3 = performance.now();
    const c = process.cpuUsage(c0);
    const atPeak = trace.stop();
    process.stdout.write(
      `${JSON.stringify({
        records: src.records,
        ms: t3 - t0,
        cpuMs: (c.user + c.system) / 1000,
        readMs: t1 - t0,
        diffMs: t2 - t1,
        planMs: t3 - t2,
        readCpuMs: (c1.user + c1.system) / 1000,
        diffCpuMs: (c2.user + c2.system - c1.user - c1.system) / 1000,
        maxRssMb: process.resourceUsage().maxRSS / 1024,
        atPeak,
        counts: cs.counts,
        path: plan.path,
        kept,
        loadAvg1: (await import('node:os')).loadavg()[0],
      })}\n`,
    );
  } finally {
    db.close();
    rmSync(work, { recursive: true, force: true });
  }
} else if (mode === '--migrate') {
  migrateMeasure(file);
} else {
  throw new Error('usage: diff.bench.mjs --seed|--measure <export.csv> <state.db> | --keep|--measure-kept <csv> <state.db> <dir> | --migrate <state.db>');
}

/** Issue 13: how long a database of as many records as the export takes to open when migration 15 must fill its tallies. */
function migrateMeasure(path) {
  const conn = new Database(path);
  const later = MIGRATIONS.filter((x) => x.version > 14);
  const tables = new Set(later.flatMap((m) => [...m.sql.matchAll(/CREATE\s+TABLE\s+(\w+)/gi)].map((x) => x[1])));
  for (const m of later) {
    // A trigger's body (BEGIN … END) holds statements of its own: one CREATE for the count. A row inserted into, or a
    // column added to, a table these migrations create goes with that table.
    const sql = m.sql.replace(/--.*$/gm, '').replace(/\bBEGIN\b[\s\S]*?\bEND\b/g, '').trim();
    const names = [...sql.matchAll(/CREATE\s+(TABLE|INDEX|TRIGGER)\s+(\w+)/gi)];
    const statements = sql.split(';').filter((x) => x.trim() !== '' && !tables.has(/^\s*(?:INSERT\s+INTO|ALTER\s+TABLE)\s+(\w+)/i.exec(x)?.[1] ?? ''));
    if (names.length !== statements.length) throw new Error(`bench: migration ${m.version} does more than create tables, indexes and triggers; teach --migrate to undo it`);
    for (const [, kind, name] of names.reverse()) conn.exec(`DROP ${kind.toUpperCase()} IF EXISTS ${name}`);
  }
  conn.pragma('user_version = 14');
  conn.close();
  const time = () => {
    global.gc?.();
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    openStateDb(path).close();
    const c = process.cpuUsage(c0);
    return { ms: performance.now() - t0, cpuMs: (c.user + c.system) / 1000 };
  };
  const migrating = time();
  const rss = process.resourceUsage().maxRSS / 1024;
  const migrated = time();
  process.stdout.write(`${JSON.stringify({ ms: migrating.ms, cpuMs: migrating.cpuMs, maxRssMb: rss, openMs: migrated.ms, openCpuMs: migrated.cpuMs })}\n`);
}
