// Issue 13's per-taker progress: what planning a shared export's backlog costs when each taker goes through the
// files on its own (the pure planner, src/files/fan-out-plan.ts, over the state database's export_files rows,
// as ExportRuntime's pass asks them). BENCH_PROGRESS_FILES (300) files waiting, BENCH_PROGRESS_TAKERS (20) takers
// (update feeds), one of them paused (kept at the first file): the others go through every file, each step's
// outcome noted as the fan-out notes it; then the paused one catches up. No sync is run: this is the overhead
// the progress adds per file. Run after a build:
//   node test/bench/fan-out-progress.bench.mjs    one JSON line
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const dist = new URL('../../dist/', import.meta.url);
const { openStateDb } = await import(new URL('snapshot/db.js', dist).href);
const { ExportTakers } = await import(new URL('snapshot/export-takers.js', dist).href);
const { archivable, fileOrder, nextStep } = await import(new URL('files/fan-out-plan.js', dist).href);
const { TakerProgress } = await import(new URL('files/taker-progress.js', dist).href);

const FILES = Number(process.env.BENCH_PROGRESS_FILES ?? 300);
const TAKERS = Number(process.env.BENCH_PROGRESS_TAKERS ?? 20);
const dir = await mkdtemp(join(tmpdir(), 'dc-bench-progress-'));
const db = openStateDb(join(dir, 'state.db'));
const marks = new ExportTakers(db.conn);
const takers = Array.from({ length: TAKERS }, (_, i) => ({ dataset: `store-${i}`, feed: 'stock' }));
const key = (t) => `${t.dataset}/${t.feed}`;
const byKey = new Map(takers.map((t) => [key(t), t]));
let files = fileOrder(Array.from({ length: FILES }, (_, i) => ({ path: `/ho/stock-${i}.csv`, mtimeMs: 1_700_000_000_000 + i * 1000 })));
// As ExportRuntime asks: through TakerProgress (BENCH_PROGRESS_DIRECT=1: a query per file and taker, as first written).
const progress = new TakerProgress(marks, 'ho');
const direct = process.env.BENCH_PROGRESS_DIRECT === '1';
const done = direct
  ? (k, f) => {
      const m = marks.fileMark('ho', byKey.get(k), f);
      return m !== null && m.outcome !== 'kept';
    }
  : (k, f) => progress.done(byKey.get(k), f);
let paused = true;
let steps = 0;
let archived = 0;
const run = () => {
  for (;;) {
    const step = nextStep(files, takers.map((t, i) => ({ key: key(t), full: false, blocked: i === 0 && paused })), done);
    if (!step) break;
    steps++;
    for (const k of step.take?.takers ?? []) {
      const kept = paused && k === key(takers[0]);
      marks.markFile('ho', byKey.get(k), step.take.file, { outcome: kept ? 'kept' : 'done', result: kept ? 'paused' : 'published', code: null, at: Date.now(), sha256: 'x' });
    }
    if (step.take) progress.refresh(step.take.file);
    const gone = archivable(files, takers.map(key), done);
    for (const f of gone) progress.forget(f);
    archived += gone.length;
    files = files.slice(gone.length);
  }
};
const t0 = performance.now();
run();
const behindMs = performance.now() - t0;
paused = false;
const t1 = performance.now();
run();
const catchUpMs = performance.now() - t1;
db.close();
await rm(dir, { recursive: true, force: true });
console.log(JSON.stringify({ bench: 'fanout-progress', direct, files: FILES, takers: TAKERS, steps, archived, others_through_backlog_ms: Math.round(behindMs), per_file_ms: +(behindMs / FILES).toFixed(2), paused_catch_up_ms: Math.round(catchUpMs) }));
